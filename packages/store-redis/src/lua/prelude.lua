-- Prelude of every script in src/lua: scripts/generate-lua.mjs puts this text (and prelude-compact.lua
-- for the scripts of the compact layout) before each script, and the store puts the configuration
-- before them all (see RedisStore.define), in one of two ways:
--
-- Inline, for the first 64 distinct configurations a store sees (INLINE_CONFIGURATIONS in
-- script-plan.ts): the parameters are part of the script text, one cached script per configuration
-- and call, and a decision sends only what changes per call (the key and field, the cost, `now`):
--
--   local OP, IDEMPOTENT = 'c', false   -- the operation, one script per call (see src/wire.ts):
--                                       -- 'c' consume, 'v' reserve, 'p' peek (writes nothing),
--                                       -- 'u' undo, 's' settle, 'a' acquire, 'r' release; and
--                                       -- whether the call carries an idempotent charge ('c', 'v':
--                                       -- its id and fingerprint; 'u': the id it forgets)
--   local IDEM_KEY = 3                  -- keys of their own: the KEYS index of an idempotent call's
--                                       -- remembered ids (after the state's keys)
--   local BATCH_TIME = false            -- a batch's Redis TIME (see src/batch-script.ts), read
--                                       -- once for all its decisions; false alone: TIME is read
--   local UNDO_AT, UNDO_DELAY           -- nil (declared on the OP line): an undo reads its
--                                       -- arguments (see below)
--   local EXPLICIT_NOW_MARGIN_MS = 1000 -- added to expiries when the caller passes its own `now`
--   local LIMIT, WINDOW = 100, 60000    -- the algorithm's constants (its `script.constants` in
--                                       -- @rl/core, in sorted order), as number literals
--   local HORIZON, STATE_BYTES = 60000, 24
--                                       -- compact layout: the longest time (ms) a state needs to
--                                       -- recover (`script.layout.horizonMs`), and the size of a
--                                       -- packed state: `kept` and `script.layout.stateSize` doubles
--
-- By argument, for every configuration beyond those: one script per script name and call, which
-- reads the same names from the arguments after the call's own, and a call always sends all of
-- its arguments ('' for an absent one), then the configuration (each number as JS
-- `String(value)`, which `tonumber` reads back as the same double a literal gives):
--
--   local COUNT_DENIED, LIMIT, WINDOW = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
--   local HORIZON, STATE_BYTES = tonumber(ARGV[7]), 24
--
-- Either way the scripts read plain locals: the same numbers, the same decisions. Sending them costs
-- Redis a `tonumber` per number and the client an argument each, so the few static configurations of
-- most apps stay inline; the arguments keep Redis's script cache from growing with configurations
-- built per request (per-customer quotas).
--
-- The store also declares where each argument is (src/wire.ts, the protocol declared once): ARG_OWN
-- (the cost, or a lease id), ARG_NOW, ARG_MAX_DELAY (a reservation's), ARG_CHARGED_AT and ARG_DELAY
-- (an undo's time of the charge it gives back and that charge's delay, a reservation's `delayMs`: its
-- slot is the sum), the same positions for every operation, each '' or absent for none:
--
--   local ARG_OWN, ARG_NOW, ARG_MAX_DELAY, ARG_CHARGED_AT, ARG_DELAY = 2, 3, 4, 5, 6
--
-- The preludes run as statements, and the scripts of the compact layout define no functions: Redis
-- runs a script's whole chunk on every call, so each `local function` is a closure made per call, and
-- its upvalues are slower to reach than locals (measured on the token bucket: see DESIGN-NOTES.md).
-- The sliding log's record visitor and concurrency's `exact` stay functions: their commands cost far
-- more.
--
-- A decision is returned as six little-endian doubles: allowed (1 or 0), remaining (units), the
-- times until the reset, until a retry may pass (read only when denied) and of the delay, in ms, exact,
-- and the `now` it was decided at (the decision's `at`, which a give-back sends back as the time of its
-- charge). The times and units are exact: the
-- store rounds them as @rl/core does (ms up, units down, forgiving float noise of EPSILON), which costs
-- the client less than it costs Redis. One binary string costs Redis and the client less than an
-- array reply.

-- Float noise forgiven in comparisons with a limit, as in @rl/core.
local EPSILON = 1e-9

-- A call with an idempotent charge (IDEMPOTENT: a consume or a reservation with its id, the undo that
-- forgets its id) runs its operation as any call does, with `idem_id`, the request's digested id
-- (ARGV[ARG_IDEM]; see idem-read.lua): nil for every other call.
local idem_id = nil
if IDEMPOTENT then idem_id = ARGV[ARG_IDEM] end

-- `now` (ms): ARGV[ARG_NOW] when the caller passes its own, with an expiry margin of
-- EXPLICIT_NOW_MARGIN_MS; absent (inline) or '' (by argument), Redis TIME, with no margin (the TTL then
-- runs on the same clock).
-- `redis_now` is Redis TIME once read (a write of the compact layout reads it when the caller passed `now`).
local now, margin, redis_now = ARGV[ARG_NOW], EXPLICIT_NOW_MARGIN_MS, nil
if OP == 'r' then
  -- A release (concurrency) needs no time: it only removes its lease.
elseif now == nil or now == '' then
  local t = BATCH_TIME or redis.call('TIME')
  now, margin = t[1] * 1000 + t[2] / 1000, 0
  redis_now = now
else
  now = tonumber(now)
  -- A caller's `now` that is not a finite number (an app clock that returned NaN or an infinity, sent as
  -- 'NaN' or 'Infinity', which Lua reads as numbers) never reaches a state: the script stops before it
  -- reads or writes anything, and the store rejects with a StoreError. Redis TIME is always finite
  -- (a TIME that could not be read raises), so the check runs on this branch only.
  if now == nil or now ~= now or now == math.huge or now == -math.huge then
    return redis.error_reply('ERR rl: now is not a finite number of ms')
  end
end
-- A reservation's maxDelay (ms; nil for every other operation: a consume cannot wait), and an undo's
-- time of the charge (nil for none) and its delay (0 for none), as the algorithms' TS step and undo take them.
-- UNDO_AT and UNDO_DELAY (nil but in a group's own undo, see src/group-script.ts) stand for the two
-- arguments when the script gives back what it has just charged.
-- A settle ('s') reads the time and delay of its charge too, its real cost and how far past its limit
-- it may charge (`settle_actual`, `max_debt`; see `Settlement` in @rl/core): the cost the charge took
-- is its own argument.
local max_delay, charged_at, charged_delay, settle_actual, max_debt = nil, nil, 0, nil, 0
-- Set by a key's live override (see prelude-compact.lua): its policy, appended to the decision's reply,
-- and its end (ms, on the clock of `now`); and by a blocking variant's reply (block-reply.lua), the
-- retry of the key's block (ms; 0 for none), which idem-reply.lua weighs against the override's end.
local override_policy, override_end, block_retry = false, 0, 0
if OP == 'v' then
  max_delay = tonumber(ARGV[ARG_MAX_DELAY])
elseif OP == 'u' or OP == 's' then
  charged_at = UNDO_AT or tonumber(ARGV[ARG_CHARGED_AT])
  charged_delay = UNDO_DELAY or tonumber(ARGV[ARG_DELAY]) or 0
  if OP == 's' then settle_actual, max_debt = tonumber(ARGV[ARG_ACTUAL]), tonumber(ARGV[ARG_MAX_DEBT]) end
end
