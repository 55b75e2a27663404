-- Counts a replay in its record (see idem-reply.lua), keys of their own: the record's two bytes of
-- count overwritten in place (SETRANGE keeps the key's expiry, which no record's time changes).
redis.call('SETRANGE', KEYS[IDEM_KEY], idem_replay_offset + 47, struct.pack('<H', idem_replays + 1))
