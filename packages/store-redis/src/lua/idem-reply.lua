-- The reply of every rate script (scripts/generate-lua.mjs puts it in place of the script's final reply,
-- taken as `i_allowed, i_remaining, i_reset, i_retry, i_delay`; after block-reply.lua in a blocking
-- variant), for an idempotent charge (see idem-read.lua): a replay answers the earlier decision,
-- allowed (2: a replay) at its `at`, with what is left of its delay and the numbers of now (the peek
-- that ran), and counts the replay in its record (the layout's idem-count-*.lua: two bytes written,
-- every other byte of the records as read); a conflict's decision is marked (3
-- allowed, -1 denied); an admitting decision that is neither is remembered under its id (its replays
-- at 0), the oldest record dropped past ARGV[ARG_IDEM_MAX], for ARGV[ARG_IDEM_TTL] ms (on the clock of
-- `now`). While the key is blocked `idem_id` is nil (see block-read.lua): the block's denial, nothing
-- written. The TS twin is `decideIdempotent` of @rl/store-memory.
local i_at = now
if idem_id ~= nil then
  if idem_replay_at ~= nil then
    i_allowed, i_retry, i_at = 2, 0, idem_replay_at
    i_delay = math.max(0, idem_replay_at + idem_replay_delay - now)
    --#idem-count
  elseif idem_conflict then
    if i_allowed == 1 then i_allowed = 3 else i_allowed = -1 end
  elseif i_allowed == 1 and (OP == 'c' or OP == 'v') then
    local idem_max = tonumber(ARGV[ARG_IDEM_MAX])
    while #idem_live >= idem_max do table.remove(idem_live, 1) end
    -- Its delay as the decision reports it (whole ms, up, as @rl/core's ceilMs): a replay's slot is the
    -- one the client was told, the memory store's too.
    local told_delay = 0
    if i_delay > EPSILON then told_delay = math.ceil(i_delay - EPSILON) end
    idem_live[#idem_live + 1] = idem_id .. ARGV[ARG_FINGERPRINT] .. struct.pack('<dddH', now + tonumber(ARGV[ARG_IDEM_TTL]), now, told_delay, 0)
    --#idem-write
  end
end
-- Under a key's override, a denial of a cost above its limit is retried at the override's end (or the
-- key's block's, if later): no retry under it could admit the cost, and once it ends the limit's own
-- numbers decide (the TS twin: `decidedUnder` of @rl/core/store). Its policy follows the reply (three
-- doubles more: the limit, the quota, the window in seconds; see src/overrides.ts).
if override_policy and i_allowed <= 0 and cost > struct.unpack('<d', override_policy, 1) then
  i_retry = math.max(block_retry, override_end - now)
end
local reply = struct.pack('<dddddd', i_allowed, i_remaining, i_reset, i_retry, i_delay, i_at)
if override_policy then return reply .. override_policy end
return reply
