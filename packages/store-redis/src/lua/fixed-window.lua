-- Fixed window counter: a Lua port of fixedWindow().step/undo in @rl/core, operation for operation,
-- so that Redis and the memory store return identical decisions for the same `now`.
--
-- Compact layout (see prelude.lua). Configuration: LIMIT, WINDOW (ms), COUNT_DENIED (1 or 0).
-- KEYS[1]  the bucket hash   ARGV[1] the field: state = three doubles (deadline, windowStart, count)
-- ARGV[2]  cost (units; 0 only for a peek)   ARGV[3] now in ms (absent: Redis TIME)
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }, all whole numbers; undo
-- returns nothing.

local bucket, field = KEYS[1], ARGV[1]
local cost = tonumber(ARGV[2])
local now, margin = read_now(ARGV[3])

local raw = redis.call('HGET', bucket, field)

if OP == 'u' then
  if raw then
    local deadline, stored_start, stored_count = struct.unpack('<ddd', raw)
    if stored_start >= math.floor(now / WINDOW) * WINDOW then
      redis.call('HSET', bucket, field, struct.pack('<ddd', deadline, stored_start, math.max(0, stored_count - cost)))
    end
  end
  return nil
end

local start = math.floor(now / WINDOW) * WINDOW
local count = 0
if raw then
  local _, stored_start, stored_count = struct.unpack('<ddd', raw)
  -- The same window, or a clock that went back into an earlier one: keep the stored window.
  if stored_start >= start then
    start = stored_start
    count = stored_count
  end
end
local allowed = count + cost <= LIMIT + EPSILON
if allowed or COUNT_DENIED == 1 then count = count + cost end
local window_end = start + WINDOW
if OP == 'c' then put(bucket, field, struct.pack('<ddd', window_end, start, count), window_end, now, margin) end
local until_end = window_end - now
local reset_ms = 0
if count > 0 then reset_ms = ceil_ms(until_end) end
local retry_ms = 0
if not allowed then retry_ms = ceil_ms(until_end) end
return { allowed and 1 or 0, floor_units(LIMIT - count), reset_ms, retry_ms, 0 }
