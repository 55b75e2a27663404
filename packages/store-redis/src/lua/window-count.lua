-- Included (`--#include window-count.lua`, see scripts/generate-lua.mjs) by the counters of one window
-- at a time, the fixed window and the calendar window, whose state is (kept, windowStart, count): a
-- port of `windowCounter` in @rl/core (window-counter.ts), operation for operation. A block of
-- statements, not a function (see compact-write.lua). It ends the script with the decision.
--
-- The including script declares where windows are, around `now`: `current_start`, `current_end`,
-- `next_end` and `after_next_end` (the window of `now`, and the ends of the two after it), and
-- `bounds`, a calendar's period boundaries (nil for the fixed window). A stored window further ahead
-- (a clock that went back by more than a window) ends at its boundary among `bounds`, else one
-- current window's length later: exact for the fixed window; for a calendar, exact unless the clock
-- went back by more than three periods.
local start = current_start
local kept = 0
local count = 0
local stale = true
if raw then
  local stored_start, stored_count
  kept, stored_start, stored_count = struct.unpack('<ddd', raw)
  -- The same window, a reserved later one, or a clock that went back into an earlier one: keep the
  -- stored window.
  if stored_start >= start then
    start = stored_start
    count = stored_count
    stale = false
  end
end
-- The end of the window `start` and of the one after it.
local start_end, after_end
if start == current_start then
  start_end, after_end = current_end, next_end
elseif start == current_end then
  start_end, after_end = next_end, after_next_end
else
  -- Further ahead: among the calendar's boundaries (`bounds`, nil for the fixed window) when there.
  local length = current_end - current_start
  start_end, after_end = start + length, start + 2 * length
  if bounds ~= nil then
    for j = 1, #bounds - 1 do
      if bounds[j] == start then
        start_end = bounds[j + 1]
        after_end = bounds[j + 2] or start_end + length
      end
    end
  end
end
local room = count + cost <= LIMIT + EPSILON
local allowed
local slot = math.max(now, start)
local retry_at = start_end
if OP == 's' then
  -- A settle above the charge's cost (see prelude-compact.lua): `extra` more in the window of the
  -- charge (of its slot), never denied, up to LIMIT + max_debt: the stored window, or a new state when
  -- none is stored since that window began; nothing once it has ended.
  allowed = true
  local most = LIMIT + max_debt
  if not stale and start == charged_start then
    if count < most then count = math.min(most, count + extra) end
  elseif stale and charged_start >= current_start then
    start = charged_start
    if start ~= current_start then start_end = after_end end
    count = math.min(most, extra)
  else
    -- The window of the charge has ended: nothing to write (as the TS settle leaves the state).
    return nil
  end
elseif max_delay == nil then
  -- A consume cannot wait for a later stored window.
  allowed = room and start <= current_start
  -- A denial that is counted (COUNT_DENIED, a consume) takes its room: its retry fits beside it (see the TS step).
  if not allowed then
    if COUNT_DENIED == 1 and OP == 'c' then
      if count + 2 * cost <= LIMIT + EPSILON then retry_at = start end
    elseif room then
      retry_at = start
    end
  end
  if allowed or COUNT_DENIED == 1 then count = count + cost end
else
  -- The next window is empty.
  if not room then slot = start_end end
  -- At most into the next window: a full window after the current one has no later slot.
  allowed = slot - now <= max_delay + EPSILON and (room or start <= current_start)
  if allowed then
    if not room then
      start, start_end = slot, after_end
      count = 0
    end
    count = count + cost
  else
    retry_at = slot - max_delay
  end
end
if OP == 'c' or OP == 'v' or OP == 's' then
  local deadline, packing, s1, s2, s3 = start_end, '<ddd', start, count, nil
  --#include compact-write.lua
end
if OP == 's' then return nil end
local reset_in = 0
if count > 0 then reset_in = start_end - now end
local delay_in = 0
if allowed and max_delay ~= nil then delay_in = slot - now end
return struct.pack('<dddddd', allowed and 1 or 0, LIMIT - count, reset_in, retry_at - now, delay_in, now)
