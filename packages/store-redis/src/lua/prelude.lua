-- Prelude of every script in src/lua: scripts/generate-lua.mjs puts this text (and prelude-compact.lua
-- for the scripts of the compact layout) before each script, and the store puts the configuration
-- before them all (see RedisStore.define):
--
--   local OP = 'c'                      -- the operation, one script per operation: 'c' consume,
--                                       -- 'p' peek (writes nothing), 'u' undo, 'a' acquire, 'r' release
--   local EXPLICIT_NOW_MARGIN_MS = 1000 -- added to expiries when the caller passes its own `now`
--   local LIMIT, WINDOW = 100, 60000    -- the algorithm's parameters, as number literals
--   local HORIZON = 60000               -- compact layout: the longest time (ms) a state needs to
--                                       -- recover (a window, two for the counter, a full bucket)
--
-- Parameters are part of the script text, not arguments: Redis runs a cached script per configuration
-- and operation, and a decision sends only what changes per call (the key and field, the cost, `now`).
--
-- scripts/generate-lua.mjs also puts before this text each script's own constants: NOW_ARG, the
-- argument that carries `now`, and for the compact layout STATE_BYTES, the size of a state.
--
-- The preludes run as statements, and the scripts of the compact layout define no functions: Redis
-- runs a script's whole chunk on every call, so each `local function` is a closure made per call, and
-- its upvalues are slower to reach than locals (the token bucket took 5.15 µs of Redis time per
-- decision with its write and rounding as functions, 4.1 without; see DESIGN-NOTES.md). The sliding
-- log's record visitor and concurrency's `exact` stay functions: their commands cost far more.
--
-- A decision is returned as five little-endian doubles: allowed (1 or 0), remaining (units), and the
-- times until the reset, until a retry may pass (read only when denied) and of the delay, in ms, exact: the
-- store rounds them as @rl/core does (ms up, units down, forgiving float noise of EPSILON), which costs
-- the client less than it costs Redis. One binary string costs Redis and the client less than an
-- array reply.

-- Float noise forgiven in comparisons with a limit, as in @rl/core.
local EPSILON = 1e-9

-- `now` (ms): ARGV[NOW_ARG] when the caller passes its own, with an expiry margin of
-- EXPLICIT_NOW_MARGIN_MS; absent, Redis TIME, with no margin (the TTL then runs on the same clock).
-- `redis_now` is Redis TIME once read (a write of the compact layout reads it when the caller passed `now`).
local now, margin, redis_now = ARGV[NOW_ARG], EXPLICIT_NOW_MARGIN_MS, nil
if OP == 'r' then
  -- A release (concurrency) needs no time: it only removes its lease.
elseif now == nil then
  local t = redis.call('TIME')
  now, margin = t[1] * 1000 + t[2] / 1000, 0
  redis_now = now
else
  now = tonumber(now)
end
