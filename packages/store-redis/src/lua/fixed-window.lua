-- Fixed window counter: a Lua port of fixedWindow().step/undo in @rl/core, operation for operation,
-- so that Redis and the memory store return identical decisions for the same `now`.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: LIMIT, WINDOW (ms), COUNT_DENIED (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (kept, windowStart, count)
-- ARGV[2]  cost (units; 0 only for a peek; absent: 1)   ARGV[3] now in ms (absent: Redis TIME)
--          an undo: ARGV[2] cost, ARGV[3] the time of the charge ('' for none), ARGV[4] now
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo
-- returns nothing.
--
-- Lockouts: scripts/generate-lua.mjs also makes `fixed-window-block` of this script (see block-reply.lua).
--#blockable

-- The fixed window keeps no previous window's count.
local previous_at = nil
--#include window-undo.lua

local start = math.floor(now / WINDOW) * WINDOW
local kept = 0
local count = 0
if raw then
  local stored_start, stored_count
  kept, stored_start, stored_count = struct.unpack('<ddd', raw)
  -- The same window, or a clock that went back into an earlier one: keep the stored window.
  if stored_start >= start then
    start = stored_start
    count = stored_count
  end
end
local allowed = count + cost <= LIMIT + EPSILON
if allowed or COUNT_DENIED == 1 then count = count + cost end
local window_end = start + WINDOW
if OP == 'c' then
  local deadline, rest = window_end, struct.pack('<dd', start, count)
  --#include compact-write.lua
end
local until_end = window_end - now
local reset_in = 0
if count > 0 then reset_in = until_end end
return struct.pack('<dddddd', allowed and 1 or 0, LIMIT - count, reset_in, until_end, 0, now)
