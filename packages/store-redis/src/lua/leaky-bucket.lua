-- Leaky bucket as GCRA (meter or shape): a Lua port of leakyBucket().step/undo in @rl/core.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: CAPACITY, EMISSION (ms per unit), SHAPE (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (kept, tat, reach), tat being
--          the time the bucket or queue is empty (its deadline), reach the queue (ms) a reservation
--          longer than the bucket admitted it under (0 otherwise)
-- ARGV: after the field, the arguments of src/wire.ts (the cost, now, a reservation's maxDelay, an
--          undo's time of the charge and delay), read by the preludes
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo and settle return nothing.
--
-- Lockouts: scripts/generate-lua.mjs also makes `leaky-bucket-block` of this script (see block-reply.lua).
--#blockable

local horizon = CAPACITY * EMISSION
-- What a comparison of a backlog of `queue` ms forgives at `now` (see the TS `slackAt`): a unit in the
-- last place of `now` per slot the queue holds (and two more), at most a sixteenth of a slot.
local function slack_for(queue)
  return EPSILON + math.min(math.abs(now) * 2^-52 * (math.max(0, queue) / EMISSION + 2), EMISSION / 16)
end

if OP == 'u' or settle_back then
  if raw then
    -- An earlier tat recovers sooner: `kept` stays late enough.
    local kept, stored_tat, stored_reach = struct.unpack('<ddd', raw)
    -- With the time of the charge: its slots less the time passed since its slot; nothing when
    -- something was reserved behind it (see the TS undo).
    local back = cost * EMISSION
    if charged_at ~= nil then
      -- A settle gives back the tail of its charge's slots: the charge took `cost + settle_actual`.
      local kept_units = 0
      if settle_back then kept_units = settle_actual end
      local slot = charged_at + charged_delay
      -- Every charge of a shaper knows its slot (its delay is reported, 0 included); a meter's only when delayed.
      if (charged_delay > 0 or SHAPE == 1) and stored_tat - (slot + (cost + kept_units) * EMISSION) > slack_for(stored_tat - now) then
        back = 0
      else
        back = cost * EMISSION - math.max(0, now - slot - kept_units * EMISSION)
      end
    end
    if back > 0 then
      redis.call('HSET', bucket, field, struct.pack('<ddd', kept, math.max(now, stored_tat - back), stored_reach))
    end
  end
  return nil
end

-- Clamp the backlog to this configuration's horizon (a capacity that shrank), or to the queue reservations made.
local kept = 0
local tat = now
local reach = 0
if raw then
  local stored_tat
  kept, stored_tat, reach = struct.unpack('<ddd', raw)
  tat = math.min(stored_tat, now + math.max(horizon, reach))
end
local start = now
if tat > now then start = tat end
local next_tat = start + cost * EMISSION
local wait = start - now
-- The queue: the bucket's, or a longer reservation's.
local queue = horizon
if max_delay ~= nil and max_delay > horizon then queue = max_delay end
-- The exact wait plus the slots, not `next_tat - now` (rounded at the clock's magnitude first).
local slack = slack_for(queue)
local fits = wait + cost * EMISSION <= queue + slack
-- A reservation (max_delay) is the shaper's step in both modes, bounded by its maxDelay too.
local allowed = fits and (max_delay == nil or wait <= max_delay + slack)
local new_tat = tat
if allowed then new_tat = next_tat end
if OP == 's' then
  -- A settle above the charge's cost (see prelude-compact.lua): `extra` more from the current level, at
  -- most to full (one timestamp holds no more: a step clamps it so), never denied.
  new_tat = math.max(tat, math.min(start + extra * EMISSION, now + horizon))
  queue = reach
end
local new_reach = 0
if new_tat - now > horizon + slack then new_reach = math.max(reach, queue) end
if OP == 'c' or OP == 'v' or OP == 's' then
  local deadline, packing, s1, s2, s3 = new_tat, '<ddd', new_tat, new_reach, nil
  --#include compact-write.lua
end
if OP == 's' then return nil end
local backlog = new_tat - now
if backlog < 0 then backlog = 0 end
local delay_in = 0
if allowed and (SHAPE == 1 or max_delay ~= nil) then delay_in = wait end
local retry_in = next_tat - horizon - now
if max_delay ~= nil then retry_in = math.max(next_tat - queue - now, wait - max_delay) end
return struct.pack('<dddddd', allowed and 1 or 0, (horizon - backlog) / EMISSION, backlog, retry_in, delay_in, now)
