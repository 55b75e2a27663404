-- Writes a block that ends at `blocked_until` (block-reply.lua, compact layout): the bucket's expiry is
-- made to cover it (twice the block and the margin when too short, as compact-write.lua does for a
-- state), and `kept` says until when the hash is known to live.
if redis_now == nil then
  local t = BATCH_TIME or redis.call('TIME')
  redis_now = t[1] * 1000 + t[2] / 1000
end
local block_ttl = math.ceil(BLOCK_MS) + margin
local block_pttl = redis.call('PTTL', bucket)
if block_pttl < block_ttl then
  block_pttl = 2 * block_ttl
  redis.call('PEXPIRE', bucket, block_pttl)
end
redis.call('HSET', bucket, '#!' .. field, struct.pack('<dd', redis_now + block_pttl, blocked_until))
