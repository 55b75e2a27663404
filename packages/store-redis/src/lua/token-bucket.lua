-- Token bucket: a Lua port of tokenBucket().step/undo in @rl/core, operation for operation.
--
-- Compact layout: `bucket`, `field`, `cost` and the state read, `raw`, come from prelude-compact.lua,
-- `now` and `margin` from prelude.lua. Configuration: CAPACITY, RATE (tokens per ms).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (kept, tokens, lastRefillTime)
-- ARGV: after the field, the arguments of src/wire.ts (the cost, now, a reservation's maxDelay, an
--          undo's time of the charge and delay), read by the preludes
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo and settle return nothing.
--
-- Lockouts: scripts/generate-lua.mjs also makes `token-bucket-block` of this script (see block-reply.lua).
--#blockable

if OP == 'u' or settle_back then
  if raw then
    local kept, stored_tokens, stored_last = struct.unpack('<ddd', raw)
    -- With the time of the charge: the cost less what has refilled since its slot, or (a balance below
    -- 0) less what was reserved behind it; the slot is known to the ms (rounded up), see the TS undo.
    local back = cost
    if charged_at ~= nil then
      local tail = stored_last
      if stored_tokens < 0 then tail = stored_last - stored_tokens / RATE end
      local slot = charged_at + charged_delay
      local behind = tail - slot
      if charged_delay > 0 then
        if tail <= slot then behind = 0 else behind = tail - slot + 1 end
      end
      back = cost - math.max(0, behind) * RATE
    end
    -- More tokens recover sooner: `kept` stays late enough.
    if back > 0 then
      redis.call('HSET', bucket, field, struct.pack('<ddd', kept, math.min(CAPACITY, stored_tokens + back), stored_last))
    end
  end
  return nil
end

local kept = 0
local tokens = CAPACITY
local last = now
if raw then
  local stored_tokens, stored_last
  kept, stored_tokens, stored_last = struct.unpack('<ddd', raw)
  -- The balance is clamped to this configuration's capacity (a capacity that shrank).
  tokens = stored_tokens
  if tokens > CAPACITY then tokens = CAPACITY end
  last = stored_last
  if now > last then
    tokens = tokens + (now - last) * RATE
    if tokens > CAPACITY then tokens = CAPACITY end
    last = now
  end
end
-- When the clock went back, `last` is ahead of `now`: waits are counted from `last`.
local lag = last - now
local allowed
local delay_in = 0
local retry_in = 0
if OP == 's' then
  -- A settle above the charge's cost (see prelude-compact.lua): `extra` more, whatever the balance
  -- (never denied), down to -max_debt; refilled to `now` first, as a step is.
  allowed = true
  if tokens > -max_debt then tokens = math.max(-max_debt, tokens - extra) end
elseif max_delay == nil then
  allowed = tokens + EPSILON >= cost
  if allowed then
    tokens = tokens - cost
    if tokens < 0 then tokens = 0 end
  else
    retry_in = lag + (cost - tokens) / RATE
  end
else
  -- A reservation: the slot is when the balance, less the cost, is back at 0 (it may go below 0).
  local after = tokens - cost
  local wait = lag
  if after < -EPSILON then wait = lag - after / RATE end
  allowed = wait <= max_delay + EPSILON
  if allowed then
    if after >= -EPSILON then tokens = math.max(0, after) else tokens = after end
    delay_in = wait
  else
    retry_in = wait - max_delay
  end
end
-- The bucket is full again (the same as no state) at last + (capacity - tokens) / rate.
local full_in = (CAPACITY - tokens) / RATE
if OP == 'c' or OP == 'v' or OP == 's' then
  local deadline, packing, s1, s2, s3 = last + full_in, '<ddd', tokens, last, nil
  --#include compact-write.lua
end
if OP == 's' then return nil end
return struct.pack('<dddddd', allowed and 1 or 0, tokens, lag + full_in, retry_in, delay_in, now)
