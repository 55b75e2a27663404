-- Prelude of every script in src/lua: scripts/generate-lua.mjs puts this text (and prelude-compact.lua
-- for the scripts of the compact layout) before each script, and the store puts the configuration
-- before them all (see RedisStore.define):
--
--   local OP = 'c'                      -- the operation, one script per operation: 'c' consume,
--                                       -- 'p' peek (writes nothing), 'u' undo, 'a' acquire, 'r' release
--   local EXPLICIT_NOW_MARGIN_MS = 1000 -- added to expiries when the caller passes its own `now`
--   local LIMIT, WINDOW = 100, 60000    -- the algorithm's parameters, as number literals
--
-- Parameters are part of the script text, not arguments: Redis runs a cached script per configuration
-- and operation, and a decision sends only what changes per call (the key, the cost, `now`).
--
-- Conventions of every script, written out in each (a function of the prelude costs Redis about
-- 0.1 µs per call to define, so the prelude keeps only what several places of a script share):
-- - `now` (ms) is the last argument when the caller passes it, with an expiry margin of
--   EXPLICIT_NOW_MARGIN_MS; absent, it is Redis TIME, with no margin (the TTL runs on the same clock).
-- - A decision is returned as five little-endian doubles (allowed 1 or 0, remaining, resetMs,
--   retryAfterMs, delayMs), whole numbers: one binary string costs Redis and the client less than an
--   array reply.

-- Rounding as in @rl/core: ms up and units down, forgiving float noise of EPSILON.
local EPSILON = 1e-9
local function ceil_ms(ms) if ms <= EPSILON then return 0 end return math.ceil(ms - EPSILON) end
local function floor_units(units) if units <= 0 then return 0 end return math.floor(units + EPSILON) end
