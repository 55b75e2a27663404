-- Included (`--#include idem-read.lua`) by prelude-compact.lua and by the scripts whose state has keys
-- of its own, once they have read `idem_raw`, the remembered ids of the key (nil for none): for an
-- idempotent charge (`idem_id`, see prelude.lua), finds its id among them. The value is `kept` (a
-- double: until when the container is known to live, as a state's) and records of 48 bytes: the id's
-- digest (16 bytes), the fingerprint's (8), then three doubles: when it is forgotten (on the clock of
-- `now`, as the memory store's records: the limiter's clock when it passes one, else Redis TIME), the
-- decision's `at` and its delay. Expired records are dropped here (`idem_live` holds the others, as
-- strings); the id's own is dropped for an undo ('k': its charge was given back). A live record of the
-- same fingerprint is a replay (`idem_replay_at`, `idem_replay_delay`): the operation becomes a peek of
-- cost 0 (nothing charged; its reply is the earlier decision, see idem-reply.lua); of another
-- fingerprint, a conflict (`idem_conflict`): decided and charged as any request, and not remembered.
local idem_live, idem_replay_at, idem_replay_delay, idem_conflict = nil, nil, 0, false
if idem_id ~= nil then
  if redis_now == nil then
    local t = BATCH_TIME or redis.call('TIME')
    redis_now = t[1] * 1000 + t[2] / 1000
  end
  idem_live = {}
  if idem_raw then
    for o = 9, #idem_raw - 47, 48 do
      if struct.unpack('<d', idem_raw, o + 24) > now then
        if idem_raw:sub(o, o + 15) ~= idem_id then
          idem_live[#idem_live + 1] = idem_raw:sub(o, o + 47)
        elseif OP ~= 'u' then
          idem_live[#idem_live + 1] = idem_raw:sub(o, o + 47)
          if idem_raw:sub(o + 16, o + 23) == ARGV[ARG_FINGERPRINT] then
            idem_replay_at, idem_replay_delay = struct.unpack('<dd', idem_raw, o + 32)
          else
            idem_conflict = true
          end
        end
      end
    end
  end
  if idem_replay_at ~= nil and (OP == 'c' or OP == 'v') then
    OP = 'p'
    cost = 0
  end
end
