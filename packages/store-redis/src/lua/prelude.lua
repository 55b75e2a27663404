-- Prelude of every script in src/lua: scripts/generate-lua.mjs puts this text before each script (one
-- script for Redis), so that the scripts share these definitions instead of repeating them.

-- Rounding as in @rl/core: ms up and units down, forgiving float noise of EPSILON.
local EPSILON = 1e-9
local function ceil_ms(ms) if ms <= EPSILON then return 0 end return math.ceil(ms - EPSILON) end
local function floor_units(units) if units <= 0 then return 0 end return math.floor(units + EPSILON) end

--- The time in ms of a decision: `arg` (the caller's `now`, ARGV[2]), or Redis TIME when `arg` is ''.
local function read_now(arg)
  if arg == '' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
  end
  return tonumber(arg)
end

