-- Prelude of the scripts of the compact layout, after prelude.lua.

-- The compact layout (fixed window, sliding counter, token bucket, leaky bucket): the states of many
-- keys share one hash, KEYS[1] (a bucket of the store), each under its own field, ARGV[1]. A state is
-- a string of little-endian doubles whose first is `kept`: a time on Redis's clock until which the
-- hash is known to live, never before the state is the same as no state (its deadline) plus the
-- expiry margin. Fields have no expiry of their own: the hash's expiry covers the latest `kept` of its
-- fields, and one new field in four (by the millisecond of Redis TIME) removes the dead ones among 12
-- sampled fields: three per new field on average, so dead fields stay a bounded share of a hash that
-- is written without end (a third at most, when every key is written once and never again).
--
-- `kept` is on Redis's clock whatever clock the limiter uses: limiters with different clocks share
-- buckets, and an app clock may step back; Redis's clock is the one the hash's expiry runs on.

-- KEYS[1] the bucket, ARGV[1] the field, ARGV[2] the cost (absent: 1); the state as read.
local bucket, field = KEYS[1], ARGV[1]
local cost = ARGV[2]
if cost == nil then cost = 1 else cost = tonumber(cost) end
local raw = redis.call('HGET', bucket, field)
-- A value of another size (another layout, another version of the store) counts as no state.
if raw and #raw ~= STATE_BYTES then raw = nil end

--- Dead fields are removed only this long after their `kept` (a failover to a replica whose clock
--- differs a little must not remove live states).
local PRUNE_SLACK_MS = 1000

--- Writes the state `rest` (its packed doubles after the first) under `field`. `kept` is the first
--- double of the state read (0 for none); it moves on when the state's `deadline` (on the caller's
--- clock, as `now`) plus `margin` passes it: the hash's expiry is read and, when too short, set to
--- twice the longest time a state of this configuration can need (HORIZON, set by the store, plus
--- the margin), so that a busy hash is neither read nor extended on most writes. One new
--- field in four then removes the dead fields among 12 sampled ones (one call of 12 costs Redis less
--- than four calls of 3).
local function write(kept, deadline, rest)
  if redis_now == nil then
    local t = redis.call('TIME')
    redis_now = t[1] * 1000 + t[2] / 1000
  end
  local extend = 0
  local left = deadline - now
  if redis_now + left + margin > kept then
    local ttl = math.ceil(left)
    if ttl < 1 then ttl = 1 end
    ttl = ttl + margin
    local pttl = redis.call('PTTL', bucket)
    if pttl < ttl then
      extend = 2 * math.max(ttl, math.ceil(HORIZON) + margin)
      pttl = extend
    end
    kept = redis_now + pttl
  end
  local added = redis.call('HSET', bucket, field, struct.pack('<d', kept) .. rest)
  if extend > 0 then redis.call('PEXPIRE', bucket, extend) end
  if added == 1 and math.floor(redis_now) % 4 == 0 then
    local sample = redis.call('HRANDFIELD', bucket, 12, 'WITHVALUES')
    for i = 1, #sample, 2 do
      local value = sample[i + 1]
      if sample[i] ~= field and #value >= 8 and struct.unpack('<d', value) + PRUNE_SLACK_MS <= redis_now then
        redis.call('HDEL', bucket, sample[i])
      end
    end
  end
end
