-- Concurrency leases: a Lua port of concurrency().acquire/release in @rl/core.
--
-- KEYS[1]  the leases: a sorted set, member = lease id, score = the time (ms) the lease expires
-- Configuration (see prelude.lua): LIMIT, LEASE_MS; OP 'a' acquire, 'p' peek (writes nothing),
-- 'r' release (returns nothing)
-- ARGV     the arguments of src/wire.ts: the lease id (ARG_OWN), now (absent: Redis TIME; unused by 'r')
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua)

-- Scores go to Redis as text: 17 significant digits keep every double exact.
local function exact(n) return string.format('%.17g', n) end

local key = KEYS[1]
local lease_id = ARGV[ARG_OWN]

if OP == 'r' then
  -- The key disappears with its last member; its expiry covers the remaining leases.
  redis.call('ZREM', key, lease_id)
  return nil
end

local limit = LIMIT
local lease_ms = LEASE_MS

-- Live leases expire after `now`; on acquire, the others are removed first.
local after_now = '(' .. exact(now)
local live
if OP == 'a' then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', exact(now))
  live = redis.call('ZCARD', key)
else
  live = redis.call('ZCOUNT', key, after_now, '+inf')
end
local newest = -math.huge
if live > 0 then
  newest = tonumber(redis.call('ZREVRANGEBYSCORE', key, '+inf', after_now, 'WITHSCORES', 'LIMIT', 0, 1)[2])
end

-- Acquiring a lease id that is already live renews it: it holds its permit, it takes no other.
local held_until = tonumber(redis.call('ZSCORE', key, lease_id))
local held = held_until ~= nil and held_until > now
local allowed = held or live < limit
if allowed and OP == 'a' then
  local expires_at = now + lease_ms
  redis.call('ZADD', key, exact(expires_at), lease_id)
  if not held then live = live + 1 end
  newest = math.max(newest, expires_at)
  -- The set is the same as no set once its newest lease has expired.
  redis.call('PEXPIRE', key, math.max(1, math.ceil(newest - now)) + margin)
end

local reset_ms = 0
if newest > now then reset_ms = newest - now end
local retry_ms = 0
if not allowed then
  -- Denied: the oldest live lease is the first to free a permit (when nobody releases one sooner).
  local oldest = tonumber(redis.call('ZRANGEBYSCORE', key, after_now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2])
  retry_ms = oldest - now
end
return struct.pack('<dddddd', allowed and 1 or 0, limit - live, reset_ms, retry_ms, 0, now)
