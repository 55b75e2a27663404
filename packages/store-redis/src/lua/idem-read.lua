-- Included (`--#include idem-read.lua`) by prelude-compact.lua and by the scripts whose state has keys
-- of its own, once they have read `idem_raw`, the remembered ids of the key (nil for none), and after
-- the block read of a blocking variant (which, while the key is blocked, has made `idem_id` nil: a
-- ban or a lockout outranks a replay, see block-read.lua): for an idempotent charge (`idem_id`, see
-- prelude.lua), finds its id among them. The value is `kept` (a double: until when the container is
-- known to live, as a state's) and records of 50 bytes: the id's digest (16 bytes), the fingerprint's
-- (8), then three doubles: when it is forgotten (on the clock of `now`, as the memory store's records:
-- the limiter's clock when it passes one, else Redis TIME), the decision's `at` and its delay; then
-- the times it has been answered again, an unsigned 16-bit integer (at most ARGV[ARG_IDEM_REPLAYS],
-- itself at most 1,000). Expired records are dropped here (`idem_live` holds the others, as strings);
-- the id's own is dropped for an undo (IDEMPOTENT 'u': its charge was given back). A live record of the same
-- fingerprint with replays left is a replay (`idem_replay_at`, `idem_replay_delay`, and where the
-- record starts in `idem_raw` and its count, `idem_replay_offset`, `idem_replays`): the operation
-- becomes a plain peek of cost 0 (nothing charged; its reply is the earlier decision, and its record
-- counts the replay, see idem-reply.lua); one that has
-- used its replays is dropped too, so that the charge, decided as any request, is remembered afresh
-- when admitted (denied, nothing is written: the record stays); of another fingerprint, a conflict
-- (`idem_conflict`): decided and charged as any request, and not remembered.
local idem_live, idem_replay_at, idem_replay_delay, idem_replay_offset, idem_replays, idem_conflict = nil, nil, 0, 0, 0, false
if idem_id ~= nil then
  if redis_now == nil then
    local t = BATCH_TIME or redis.call('TIME')
    redis_now = t[1] * 1000 + t[2] / 1000
  end
  idem_live = {}
  if idem_raw then
    for o = 9, #idem_raw - 49, 50 do
      if struct.unpack('<d', idem_raw, o + 24) > now then
        if idem_raw:sub(o, o + 15) ~= idem_id then
          idem_live[#idem_live + 1] = idem_raw:sub(o, o + 49)
        elseif OP ~= 'u' then
          if idem_raw:sub(o + 16, o + 23) ~= ARGV[ARG_FINGERPRINT] then
            idem_live[#idem_live + 1] = idem_raw:sub(o, o + 49)
            idem_conflict = true
          else
            idem_replays = struct.unpack('<H', idem_raw, o + 48)
            if idem_replays < tonumber(ARGV[ARG_IDEM_REPLAYS]) then
              idem_live[#idem_live + 1] = idem_raw:sub(o, o + 49)
              idem_replay_offset = o
              idem_replay_at, idem_replay_delay = struct.unpack('<dd', idem_raw, o + 32)
            end
          end
        end
      end
    end
  end
  -- A replay's numbers of now are a plain peek's (a reservation's too: no `max_delay`), as the TS twin's.
  if idem_replay_at ~= nil and (OP == 'c' or OP == 'v') then
    OP, cost, max_delay = 'p', 0, nil
  end
end
