-- Sliding window counter (two aligned windows, weighted estimate): a Lua port of
-- slidingWindowCounter().step/undo in @rl/core, operation for operation. Both windows live in one
-- field, so one read and one write serve a decision.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: LIMIT, WINDOW (ms), COUNT_DENIED (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = four doubles (kept, currentWindowStart,
--          previousCount, currentCount)
-- ARGV[2]  cost (absent: 1)   ARGV[3] now in ms (absent: Redis TIME)
--          an undo: ARGV[2] cost, ARGV[3] the time of the charge ('' for none), ARGV[4] now
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo returns nothing.
--
-- Lockouts: scripts/generate-lua.mjs also makes `sliding-window-counter-block` of this script (see block-reply.lua).
--#blockable

-- The previous window's count is the state's last double but one.
local previous_at = STATE_BYTES - 16
--#include window-undo.lua

local start = math.floor(now / WINDOW) * WINDOW
local kept = 0
local previous = 0
local current = 0
if raw then
  local stored_start, stored_previous, stored_current
  kept, stored_start, stored_previous, stored_current = struct.unpack('<dddd', raw)
  if stored_start >= start then
    -- Same window, or the clock went back: keep the stored windows.
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
local allowed = estimate + cost <= LIMIT + EPSILON
if allowed or COUNT_DENIED == 1 then current = current + cost end
-- The current count stops mattering two windows after the current window starts.
if OP == 'c' then
  local deadline, rest = start + 2 * WINDOW, struct.pack('<ddd', start, previous, current)
  --#include compact-write.lua
end
local after = (previous * left) / WINDOW + current
local window_end = start + WINDOW
local reset_at = now
if current > 0 then reset_at = window_end + WINDOW elseif previous > 0 then reset_at = window_end end
local retry_at = now
if not allowed then
  -- Earliest time at which estimate + cost <= limit, assuming nothing else is admitted.
  local room = LIMIT - cost - current
  if room >= -EPSILON and previous > 0 then
    retry_at = window_end - (math.max(0, room) * WINDOW) / previous
  else
    -- In the next window the current count becomes the previous one.
    local next_room = LIMIT - cost
    if current > 0 then
      retry_at = math.max(window_end, window_end + WINDOW - (next_room * WINDOW) / current)
    else
      retry_at = window_end
    end
  end
end
return struct.pack('<dddddd', allowed and 1 or 0, LIMIT - after, reset_at - now, retry_at - now, 0, now)
