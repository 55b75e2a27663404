-- Fixed window counter: a Lua port of fixedWindow() in @rl/core (its steps are window-count.lua's, as
-- the TS ones are windowCounter's over aligned windows), so that Redis and the memory store return
-- identical decisions for the same `now`.
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

-- The windows [k·WINDOW, (k+1)·WINDOW); the fixed window keeps no previous window's count.
local previous_at = nil
local current_start = math.floor(now / WINDOW) * WINDOW
local charged_start = nil
if charged_at ~= nil then charged_start = math.floor((charged_at + charged_delay) / WINDOW) * WINDOW end
--#include window-undo.lua

local current_end = current_start + WINDOW
local next_end, after_next_end = current_end + WINDOW, current_end + 2 * WINDOW
local bounds = nil
--#include window-count.lua
