-- Included (`--#include compact-write.lua`, see scripts/generate-lua.mjs) where a script of the compact
-- layout writes its state: a block of statements, not a function (a closure made on every call, and
-- its upvalues, cost Redis more than the rest of the write).
--
-- Writes the state under `field`: `kept`, then the doubles `s1`, `s2` (and `s3`, nil for a state of
-- three), packed as `packing` says ('<ddd' or '<dddd') in one `struct.pack` (two packs and a
-- concatenation cost a decision 0.05 µs more: bench/README.md, issue 26 part 3). `kept` is the first
-- double of the state read (0 for none); it moves on when the state's `deadline` (on the caller's
-- clock, as `now`) plus `margin` passes it: the hash's expiry is read and, when too short, set to
-- twice the longest time a state of this configuration can need (HORIZON, set by the store, plus
-- the margin), so that a busy hash is neither read nor extended on most writes. One new
-- field in four then removes the dead fields among 12 sampled ones (one call of 12 costs Redis less
-- than four calls of 3); a dead field is removed only 1000 ms after its `kept` (a failover to a
-- replica whose clock differs a little must not remove live states).
if redis_now == nil then
  local t = BATCH_TIME or redis.call('TIME')
  redis_now = t[1] * 1000 + t[2] / 1000
end
local extend = 0
local deadline_in = deadline - now
if redis_now + deadline_in + margin > kept then
  local ttl = math.ceil(deadline_in)
  if ttl < 1 then ttl = 1 end
  ttl = ttl + margin
  local pttl = redis.call('PTTL', bucket)
  if pttl < ttl then
    extend = 2 * math.max(ttl, math.ceil(HORIZON) + margin)
    pttl = extend
  end
  kept = redis_now + pttl
end
local added = redis.call('HSET', bucket, field, struct.pack(packing, kept, s1, s2, s3))
if extend > 0 then redis.call('PEXPIRE', bucket, extend) end
if added == 1 and redis_now % 4 < 1 then
  local sample = redis.call('HRANDFIELD', bucket, 12, 'WITHVALUES')
  for i = 1, #sample, 2 do
    local value = sample[i + 1]
    if sample[i] ~= field and #value >= 8 and struct.unpack('<d', value) + 1000 <= redis_now then
      redis.call('HDEL', bucket, sample[i])
    end
  end
end
