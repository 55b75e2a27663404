-- Sliding window counter (two aligned windows, weighted estimate): a Lua port of
-- slidingWindowCounter().step/undo in @rl/core, operation for operation. Both windows live in one
-- key, so one read and one write serve a decision.
--
-- KEYS[1]  state: a string of three little-endian doubles (currentWindowStart, previousCount, currentCount)
-- ARGV[1]  operation: 'c' consume, 'p' peek (writes nothing), 'u' undo (returns nothing)
-- ARGV[2]  now in ms, or '' to use Redis TIME
-- ARGV[3]  cost   ARGV[4] expiry margin in ms
-- ARGV[5]  limit   ARGV[6] windowMs   ARGV[7] countDenied ('1' or '0')
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }

-- EPSILON, ceil_ms, floor_units and read_now come from prelude.lua (put before this script by
-- scripts/generate-lua.mjs).

local key = KEYS[1]
local op = ARGV[1]
local now = read_now(ARGV[2])
local cost = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local window = tonumber(ARGV[6])
local count_denied = ARGV[7] == '1'

local raw = redis.call('GET', key)

if op == 'u' then
  if raw then
    local stored_start, stored_previous, stored_current = struct.unpack('<ddd', raw)
    if stored_start >= math.floor(now / window) * window then
      redis.call('SET', key, struct.pack('<ddd', stored_start, stored_previous, math.max(0, stored_current - cost)), 'KEEPTTL')
    end
  end
  return nil
end

local start = math.floor(now / window) * window
local previous = 0
local current = 0
if raw then
  local stored_start, stored_previous, stored_current = struct.unpack('<ddd', raw)
  if stored_start >= start then
    -- Same window, or the clock went back: keep the stored windows.
    start = stored_start
    previous = stored_previous
    current = stored_current
  elseif stored_start == start - window then
    previous = stored_current
  end
end
-- Time into the current window, clamped to [0, window) when the clock went back.
local elapsed = math.max(0, now - start)
local left = window - elapsed
local estimate = (previous * left) / window + current
local allowed = estimate + cost <= limit + EPSILON
if allowed or count_denied then current = current + cost end
if op == 'c' then
  -- The current count stops mattering two windows after the current window starts.
  local ttl = start + 2 * window - now
  redis.call('SET', key, struct.pack('<ddd', start, previous, current), 'PX', math.max(1, math.ceil(ttl)) + margin)
end
local after = (previous * left) / window + current
local window_end = start + window
local reset_at = now
if current > 0 then reset_at = window_end + window elseif previous > 0 then reset_at = window_end end
local retry_ms = 0
if not allowed then
  -- Earliest time at which estimate + cost <= limit, assuming nothing else is admitted.
  local retry_at
  local room = limit - cost - current
  if room >= -EPSILON and previous > 0 then
    retry_at = window_end - (math.max(0, room) * window) / previous
  else
    -- In the next window the current count becomes the previous one.
    local next_room = limit - cost
    if current > 0 then
      retry_at = math.max(window_end, window_end + window - (next_room * window) / current)
    else
      retry_at = window_end
    end
  end
  retry_ms = math.max(1, ceil_ms(retry_at - now))
end
return { allowed and 1 or 0, floor_units(limit - after), ceil_ms(reset_at - now), retry_ms, 0 }
