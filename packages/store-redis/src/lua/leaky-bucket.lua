-- Leaky bucket as GCRA (meter or shape): a Lua port of leakyBucket().step/undo in @rl/core.
--
-- Compact layout (see prelude.lua). Configuration: CAPACITY, EMISSION (ms per unit), SHAPE (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = one double, tat (the time the bucket or
--          queue is empty, also its deadline)
-- ARGV[2]  cost   ARGV[3] now in ms (absent: Redis TIME)
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }; undo returns nothing.

local bucket, field = KEYS[1], ARGV[1]
local cost = tonumber(ARGV[2])
local now, margin = read_now(ARGV[3])
local horizon = CAPACITY * EMISSION

local raw = redis.call('HGET', bucket, field)

if OP == 'u' then
  -- An earlier tat recovers sooner: the hash's expiry stays long enough.
  if raw then redis.call('HSET', bucket, field, struct.pack('<d', math.max(now, struct.unpack('<d', raw) - cost * EMISSION))) end
  return nil
end

-- Clamp the backlog to this configuration's horizon (a capacity that shrank).
local tat = now
if raw then tat = math.min(struct.unpack('<d', raw), now + horizon) end
local start = now
if tat > now then start = tat end
local next_tat = start + cost * EMISSION
local allowed = next_tat - now <= horizon + EPSILON
local kept = tat
if allowed then kept = next_tat end
if OP == 'c' then put(bucket, field, struct.pack('<d', kept), kept, now, margin) end
local backlog = math.max(0, kept - now)
local retry_ms = 0
if not allowed then retry_ms = math.max(1, ceil_ms(next_tat - horizon - now)) end
local delay_ms = 0
if allowed and SHAPE == 1 then delay_ms = ceil_ms(start - now) end
return { allowed and 1 or 0, floor_units((horizon - backlog) / EMISSION), ceil_ms(backlog), retry_ms, delay_ms }
