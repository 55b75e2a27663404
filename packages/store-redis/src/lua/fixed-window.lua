-- Fixed window counter: a Lua port of fixedWindow().step/undo in @rl/core, operation for operation,
-- so that Redis and the memory store return identical decisions for the same `now`.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: LIMIT, WINDOW (ms), COUNT_DENIED (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (kept, windowStart, count)
-- ARGV: after the field, the arguments of src/wire.ts (the cost, now, a reservation's maxDelay, an
--          undo's time of the charge and delay), read by the preludes
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo
-- and settle return nothing.
--
-- Lockouts: scripts/generate-lua.mjs also makes `fixed-window-block` of this script (see block-reply.lua).
--#blockable

-- The fixed window keeps no previous window's count.
local previous_at = nil
--#include window-undo.lua

local current_start = math.floor(now / WINDOW) * WINDOW
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
local room = count + cost <= LIMIT + EPSILON
local allowed
local slot = math.max(now, start)
local retry_at = start + WINDOW
if OP == 's' then
  -- A settle above the charge's cost (see prelude-compact.lua): `extra` more in the window of the
  -- charge (of its slot), never denied, up to LIMIT + max_debt: the stored window, or a new state when
  -- none is stored since that window began; nothing once it has ended.
  allowed = true
  local charged = math.floor((charged_at + charged_delay) / WINDOW) * WINDOW
  local most = LIMIT + max_debt
  if not stale and start == charged then
    if count < most then count = math.min(most, count + extra) end
  elseif stale and charged >= current_start then
    start = charged
    count = math.min(most, extra)
  else
    -- The window of the charge has ended: nothing to write (as the TS settle leaves the state).
    return nil
  end
elseif max_delay == nil then
  -- A consume cannot wait for a later stored window.
  allowed = room and start <= current_start
  if not allowed and room then retry_at = start end
  if allowed or COUNT_DENIED == 1 then count = count + cost end
else
  -- The next window is empty.
  if not room then slot = start + WINDOW end
  allowed = slot - now <= max_delay + EPSILON
  if allowed then
    if not room then
      start = slot
      count = 0
    end
    count = count + cost
  else
    retry_at = slot - max_delay
  end
end
local window_end = start + WINDOW
if OP == 'c' or OP == 'v' or OP == 's' then
  local deadline, rest = window_end, struct.pack('<dd', start, count)
  --#include compact-write.lua
end
if OP == 's' then return nil end
local until_end = window_end - now
local reset_in = 0
if count > 0 then reset_in = until_end end
local delay_in = 0
if allowed and max_delay ~= nil then delay_in = slot - now end
return struct.pack('<dddddd', allowed and 1 or 0, LIMIT - count, reset_in, retry_at - now, delay_in, now)
