-- Calendar window: a Lua port of calendarWindow() in @rl/core, a fixed window over the periods of a
-- calendar in a time zone (its steps are window-count.lua's, as the TS ones are windowCounter's).
-- Lua knows no time zones: the store sends the boundaries of six periods around the caller's clock
-- with each call (BOUND_0 … BOUND_5, the `timed` constants of the algorithm's script descriptor), and
-- the script finds the period of its own `now` among them.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: LIMIT, COUNT_DENIED (1 or 0), and per call
-- BOUND_0 … BOUND_5 (ms): the starts of the period before the caller's, of the caller's, and of the
-- four after it.
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (kept, periodStart, count)
-- ARGV: after the field, the arguments of src/wire.ts, read by the preludes, then the configuration
-- Returns  the decision: six exact doubles (see prelude.lua); undo and settle return nothing. A `now`
-- (Redis TIME) outside the first three periods (a clock more than a period away from the caller's)
-- is an error: the limiter's failure policy decides, and nothing is written.
--
-- Lockouts: scripts/generate-lua.mjs also makes `calendar-window-block` of this script (see block-reply.lua).
--#blockable

local previous_at = nil
local current_start, current_end, next_end, after_next_end
if now >= BOUND_0 and now < BOUND_1 then
  current_start, current_end, next_end, after_next_end = BOUND_0, BOUND_1, BOUND_2, BOUND_3
elseif now >= BOUND_1 and now < BOUND_2 then
  current_start, current_end, next_end, after_next_end = BOUND_1, BOUND_2, BOUND_3, BOUND_4
elseif now >= BOUND_2 and now < BOUND_3 then
  current_start, current_end, next_end, after_next_end = BOUND_2, BOUND_3, BOUND_4, BOUND_5
else
  return redis.error_reply("ERR rl: this Redis clock is more than a calendar period away from the caller's (calendarWindow)")
end
-- The period of the charge's slot; -inf when it is older than every period sent (no stored window is).
local charged_start = nil
if charged_at ~= nil then
  local t = charged_at + charged_delay
  if t >= BOUND_5 then charged_start = BOUND_5
  elseif t >= BOUND_4 then charged_start = BOUND_4
  elseif t >= BOUND_3 then charged_start = BOUND_3
  elseif t >= BOUND_2 then charged_start = BOUND_2
  elseif t >= BOUND_1 then charged_start = BOUND_1
  elseif t >= BOUND_0 then charged_start = BOUND_0
  else charged_start = -math.huge end
end
--#include window-undo.lua

local bounds = { BOUND_0, BOUND_1, BOUND_2, BOUND_3, BOUND_4, BOUND_5 }
--#include window-count.lua
