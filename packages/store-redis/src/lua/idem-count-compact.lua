-- Counts a replay in its record (see idem-reply.lua), compact layout: the field '#~' written back as
-- it was read, but the record's two bytes of count. No record's time changes, so the bucket's expiry
-- and `kept` still cover them all (expired records go at the next charge that writes the list).
redis.call('HSET', bucket, '#~' .. field, idem_raw:sub(1, idem_replay_offset + 47) .. struct.pack('<H', idem_replays + 1) .. idem_raw:sub(idem_replay_offset + 50))
