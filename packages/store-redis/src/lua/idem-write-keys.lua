-- Writes `idem_live` (see idem-read.lua), the remembered ids of an idempotent charge's key, into its
-- key of their own, KEYS[IDEM_KEY], expiring with the latest record; deletes it when none is left.
if #idem_live == 0 then
  redis.call('DEL', KEYS[IDEM_KEY])
else
  local idem_last = 0
  for i = 1, #idem_live do idem_last = math.max(idem_last, struct.unpack('<d', idem_live[i], 25)) end
  redis.call('SET', KEYS[IDEM_KEY], struct.pack('<d', idem_last) .. table.concat(idem_live), 'PX', math.ceil(idem_last - now) + 1 + margin)
end
