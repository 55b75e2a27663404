-- Writes `idem_live` (see idem-read.lua), the remembered ids of an idempotent charge's key, into the
-- field '#i' and the state's field of the bucket, or removes it when none is left. The bucket's expiry is
-- made to cover the latest record (twice what it needs when too short, as compact-write.lua does), and
-- `kept` says until when the hash is known to live, so that the sampled sweep removes the field only
-- once every record in it has expired.
if #idem_live == 0 then
  redis.call('HDEL', bucket, '#~' .. field)
else
  local idem_last = 0
  for i = 1, #idem_live do idem_last = math.max(idem_last, struct.unpack('<d', idem_live[i], 25)) end
  local idem_need = math.ceil(idem_last - now) + 1 + margin
  local idem_pttl = redis.call('PTTL', bucket)
  local idem_extend = idem_pttl < idem_need
  if idem_extend then idem_pttl = 2 * idem_need end
  redis.call('HSET', bucket, '#~' .. field, struct.pack('<d', redis_now + idem_pttl) .. table.concat(idem_live))
  if idem_extend then redis.call('PEXPIRE', bucket, idem_pttl) end
end
