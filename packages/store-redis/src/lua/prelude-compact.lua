-- Prelude of the scripts of the compact layout, after prelude.lua.

-- The compact layout (fixed window, sliding counter, token bucket, leaky bucket): the states of many
-- keys share one hash, KEYS[1] (a bucket of the store), each under its own field, ARGV[1]. A state is
-- a string of little-endian doubles whose first is `kept`: a time on Redis's clock until which the
-- hash is known to live, never before the state is the same as no state (its deadline) plus the
-- expiry margin. Fields have no expiry of their own: the hash's expiry covers the latest `kept` of its
-- fields, and one new field in four (by the millisecond of Redis TIME) removes the dead ones among 12
-- sampled fields: three per new field on average, so dead fields stay a bounded share of a hash that
-- is written without end (a third at most, when every key is written once and never again).
--
-- `kept` is on Redis's clock whatever clock the limiter uses: limiters with different clocks share
-- buckets, and an app clock may step back; Redis's clock is the one the hash's expiry runs on.

-- KEYS[1] the bucket, ARGV[1] the field, ARGV[ARG_OWN] the cost (absent: 1); the state as read.
local bucket, field = KEYS[1], ARGV[1]
local cost = ARGV[ARG_OWN]
if cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
-- A settle ('s', see prelude.lua) below the charge's cost gives back the difference as an undo does
-- (`settle_back`, `cost` the difference); above it, `extra` is what the script charges more.
local extra, settle_back = 0, false
if OP == 's' then
  if settle_actual < cost then cost, settle_back = cost - settle_actual, true else extra = settle_actual - cost end
end
-- A blocking variant reads the key's block here (scripts/generate-lua.mjs puts block-read-compact.lua
-- and block-read.lua in place of the mark), before the remembered ids: a ban or a lockout outranks a replay.
--#block-read
-- An idempotent charge's remembered ids: the field '#~' and the state's field (see idem-read.lua): '~' is
-- no base64url character, so the name is never a digest's field (`#` and base64url) nor a plain key's.
local idem_raw = nil
if idem_id ~= nil then idem_raw = redis.call('HGET', bucket, '#~' .. field) end
--#include idem-read.lua
if idem_id ~= nil and OP == 'u' then
  --#include idem-write-compact.lua
end
local raw = redis.call('HGET', bucket, field)
-- A value of another size (another layout, another version of the store) counts as no state.
if raw and #raw ~= STATE_BYTES then raw = nil end
-- A key's override (Store.setOverride), for an algorithm that checks overrides: the store puts here the
-- read of the field '#=<field>' that, while it is live, replaces the configuration's constants (but
-- BLOCK_MS and the timed ones) and HORIZON with the override's, and keeps its policy for the reply
-- (`override_policy`, see idem-reply.lua). The read: `overrideRead` in src/script-plan.ts; the
-- record: src/overrides.ts.
--#override

-- The state is written by compact-write.lua, a block each script includes where it writes.
