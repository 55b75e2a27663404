-- Token bucket: a Lua port of tokenBucket().step/undo in @rl/core, operation for operation.
--
-- Compact layout (see prelude.lua). Configuration: CAPACITY, RATE (tokens per ms).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (deadline, tokens, lastRefillTime)
-- ARGV[2]  cost   ARGV[3] now in ms (absent: Redis TIME)
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }; undo returns nothing.

local bucket, field = KEYS[1], ARGV[1]
local cost = tonumber(ARGV[2])
local now, margin = read_now(ARGV[3])

local raw = redis.call('HGET', bucket, field)

if OP == 'u' then
  if raw then
    local deadline, stored_tokens, stored_last = struct.unpack('<ddd', raw)
    -- More tokens recover sooner: the deadline kept is late enough, and so is the hash's expiry.
    redis.call('HSET', bucket, field, struct.pack('<ddd', deadline, math.min(CAPACITY, stored_tokens + cost), stored_last))
  end
  return nil
end

local tokens = CAPACITY
local last = now
if raw then
  local _, stored_tokens, stored_last = struct.unpack('<ddd', raw)
  -- The balance is clamped to this configuration's capacity (a capacity that shrank).
  tokens = math.min(CAPACITY, stored_tokens)
  last = stored_last
  if now > last then
    tokens = math.min(CAPACITY, tokens + (now - last) * RATE)
    last = now
  end
end
local allowed = tokens + EPSILON >= cost
if allowed then tokens = math.max(0, tokens - cost) end
-- The bucket is full again (the same as no state) at last + (capacity - tokens) / rate.
local full_in = (CAPACITY - tokens) / RATE
if OP == 'c' then
  local deadline = last + full_in
  put(bucket, field, struct.pack('<ddd', deadline, tokens, last), deadline, now, margin)
end
-- When the clock went back, `last` is ahead of `now`: waits are counted from `last`.
local lag = last - now
local retry_ms = 0
if not allowed then retry_ms = math.max(1, ceil_ms(lag + (cost - tokens) / RATE)) end
return { allowed and 1 or 0, floor_units(tokens), ceil_ms(lag + full_in), retry_ms, 0 }
