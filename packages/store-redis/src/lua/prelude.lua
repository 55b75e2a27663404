-- Prelude of every script in src/lua: scripts/generate-lua.mjs puts this text before each script, and
-- the store puts the configuration before both (see RedisStore: `scriptSource`):
--
--   local OP = 'c'                      -- the operation, one script per operation: 'c' consume,
--                                       -- 'p' peek (writes nothing), 'u' undo, 'a' acquire, 'r' release
--   local EXPLICIT_NOW_MARGIN_MS = 1000 -- added to expiries when the caller passes its own `now`
--   local LIMIT, WINDOW = 100, 60000    -- the algorithm's parameters, as number literals
--
-- Parameters are part of the script text, not arguments: Redis runs a cached script per configuration
-- and operation, and a decision sends only what changes per call (the key, the cost, `now`).
--
-- Each script reads `now` from its last argument: absent means Redis TIME.

-- Rounding as in @rl/core: ms up and units down, forgiving float noise of EPSILON.
local EPSILON = 1e-9
local function ceil_ms(ms) if ms <= EPSILON then return 0 end return math.ceil(ms - EPSILON) end
local function floor_units(units) if units <= 0 then return 0 end return math.floor(units + EPSILON) end

--- The time in ms of a decision and the expiry margin that goes with it: `arg` (the caller's `now`)
--- with EXPLICIT_NOW_MARGIN_MS, or Redis TIME (`arg` absent) with none, as the TTL then runs on the
--- same clock as the state.
local function read_now(arg)
  if arg == nil then
    local t = redis.call('TIME')
    return t[1] * 1000 + t[2] / 1000, 0
  end
  return tonumber(arg), EXPLICIT_NOW_MARGIN_MS
end

-- The compact layout (fixed window, sliding counter, token bucket, leaky bucket): the states of many
-- keys share one hash, KEYS[1] (a bucket of the store), each under its own field, ARGV[1]. A state is
-- a string of little-endian doubles whose first is its deadline: the time from which the state is the
-- same as no state. Fields have no expiry of their own: the hash's expiry covers its latest deadline,
-- and each new field removes the dead ones among two sampled fields, so dead fields stay a bounded
-- share of a hash that is written without end (about a third at most).

--- Dead fields are removed only this long after their deadline: states written with a caller's clock
--- (EXPLICIT_NOW_MARGIN_MS behind Redis at most) are never removed before they are dead on it.
local PRUNE_SLACK_MS = 1000

local function prune(bucket, keep, now)
  local sample = redis.call('HRANDFIELD', bucket, 2, 'WITHVALUES')
  for i = 1, #sample, 2 do
    local value = sample[i + 1]
    if sample[i] ~= keep and #value >= 8 and struct.unpack('<d', value) + PRUNE_SLACK_MS <= now then
      redis.call('HDEL', bucket, sample[i])
    end
  end
end

--- Writes `value` (whose first double is `deadline`) under `field`, and keeps the hash alive until
--- `deadline` + `margin` at least. An extended expiry gets a quarter more, so that a busy hash is not
--- extended on every write.
local function put(bucket, field, value, deadline, now, margin)
  local ttl = math.ceil(deadline - now)
  if ttl < 1 then ttl = 1 end
  ttl = ttl + margin
  if redis.call('HSET', bucket, field, value) == 1 then prune(bucket, field, now) end
  if redis.call('PTTL', bucket) < ttl then redis.call('PEXPIRE', bucket, ttl + math.floor(ttl / 4)) end
end
