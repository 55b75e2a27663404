-- Sliding window counter (two aligned windows, weighted estimate): a Lua port of
-- slidingWindowCounter().step/undo in @rl/core, operation for operation. Both windows live in one
-- field, so one read and one write serve a decision.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: LIMIT, WINDOW (ms), COUNT_DENIED (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = four doubles (kept, currentWindowStart,
--          previousCount, currentCount)
-- ARGV: after the field, the arguments of src/wire.ts (the cost, now, a reservation's maxDelay, an
--          undo's time of the charge and delay), read by the preludes
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo and settle return nothing.
--
-- Lockouts: scripts/generate-lua.mjs also makes `sliding-window-counter-block` of this script (see block-reply.lua).
--#blockable

-- The previous window's count is the state's last double but one.
local previous_at = STATE_BYTES - 16
local current_window = math.floor(now / WINDOW) * WINDOW
local current_start, charged_start, charged_next = current_window, nil, nil
if charged_at ~= nil then
  charged_start = math.floor((charged_at + charged_delay) / WINDOW) * WINDOW
  charged_next = charged_start + WINDOW
end
--#include window-undo.lua

local start = current_window
local kept = 0
local previous = 0
local current = 0
if raw then
  local stored_start, stored_previous, stored_current
  kept, stored_start, stored_previous, stored_current = struct.unpack('<dddd', raw)
  if stored_start >= start then
    -- Same window, a reserved later one, or the clock went back: keep the stored windows.
    start = stored_start
    previous = stored_previous
    current = stored_current
  elseif stored_start == start - WINDOW then
    previous = stored_current
  end
end
-- Time into the current window, clamped to [0, window) when the clock went back.
local elapsed = math.max(0, now - start)
local left = WINDOW - elapsed
local estimate = (previous * left) / WINDOW + current
-- A consume cannot wait for a later stored window.
local fits_now = estimate + cost <= LIMIT + EPSILON and start <= current_window
local window_end = start + WINDOW
-- Earliest time at which estimate + cost <= limit, assuming nothing else is admitted (read when the
-- request does not fit now): in this window as the previous count fades, else in the next.
local fit_at = now
local next_window = false
if not fits_now then
  -- A denial that is counted (COUNT_DENIED, a consume) takes its place: its retry fits beside it (see the TS step).
  local held = current
  if COUNT_DENIED == 1 and OP == 'c' and max_delay == nil then held = current + cost end
  local room = LIMIT - cost - held
  if room >= -EPSILON and previous > 0 then
    fit_at = math.max(start, window_end - (math.max(0, room) * WINDOW) / previous)
  elseif room >= -EPSILON then
    fit_at = start
  else
    -- In the next window the current count becomes the previous one.
    local next_room = LIMIT - cost
    if held > 0 then
      fit_at = math.max(window_end, window_end + WINDOW - (next_room * WINDOW) / held)
    else
      fit_at = window_end
    end
    next_window = true
  end
end
local allowed
local delay_in = 0
local retry_at = fit_at
if OP == 's' then
  -- A settle above the charge's cost (see prelude-compact.lua): `extra` more in the count of the
  -- window of the charge (of its slot), the current or the previous one, never denied, up to LIMIT +
  -- max_debt; nothing once that window is older.
  allowed = true
  local charged = math.floor((charged_at + charged_delay) / WINDOW) * WINDOW
  local most = LIMIT + max_debt
  if charged == start and current < most then
    current = math.min(most, current + extra)
  elseif charged == start - WINDOW and previous < most then
    previous = math.min(most, previous + extra)
  end
elseif max_delay == nil then
  allowed = fits_now
  if allowed or COUNT_DENIED == 1 then current = current + cost end
else
  delay_in = math.max(0, fit_at - now)
  allowed = delay_in <= max_delay + EPSILON
  if allowed then
    if next_window then
      start = window_end
      previous = current
      current = 0
    end
    current = current + cost
  else
    retry_at = fit_at - max_delay
    delay_in = 0
  end
end
-- The current count stops mattering two windows after the current window starts.
if OP == 'c' or OP == 'v' or OP == 's' then
  local deadline, packing, s1, s2, s3 = start + 2 * WINDOW, '<dddd', start, previous, current
  --#include compact-write.lua
end
if OP == 's' then return nil end
local after = (previous * math.max(0, WINDOW - math.max(0, now - start))) / WINDOW + current
local state_end = start + WINDOW
local reset_at = now
if current > 0 then reset_at = state_end + WINDOW elseif previous > 0 then reset_at = state_end end
local retry_in = 0
if not allowed then retry_in = retry_at - now end
return struct.pack('<dddddd', allowed and 1 or 0, LIMIT - after, reset_at - now, retry_in, delay_in, now)
