-- Fixed window counter: a Lua port of fixedWindow().step/undo in @rl/core, operation for operation,
-- so that Redis and the memory store return identical decisions for the same `now`.
--
-- KEYS[1]  state: a string of two little-endian doubles (windowStart, count)
-- ARGV[1]  operation: 'c' consume, 'p' peek (writes nothing), 'u' undo (returns nothing)
-- ARGV[2]  now in ms, or '' to use Redis TIME
-- ARGV[3]  cost (units; 0 only for a peek)
-- ARGV[4]  expiry margin in ms added to the time the state needs to recover
-- ARGV[5]  limit   ARGV[6] windowMs   ARGV[7] countDenied ('1' or '0')
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }, all whole numbers.

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
    local stored_start, stored_count = struct.unpack('<dd', raw)
    if stored_start >= math.floor(now / window) * window then
      redis.call('SET', key, struct.pack('<dd', stored_start, math.max(0, stored_count - cost)), 'KEEPTTL')
    end
  end
  return nil
end

local start = math.floor(now / window) * window
local count = 0
if raw then
  local stored_start, stored_count = struct.unpack('<dd', raw)
  -- The same window, or a clock that went back into an earlier one: keep the stored window.
  if stored_start >= start then
    start = stored_start
    count = stored_count
  end
end
local allowed = count + cost <= limit + EPSILON
if allowed or count_denied then count = count + cost end
if op == 'c' then
  local ttl = start + window - now
  redis.call('SET', key, struct.pack('<dd', start, count), 'PX', math.max(1, math.ceil(ttl)) + margin)
end
local until_end = start + window - now
local reset_ms = 0
if count > 0 then reset_ms = ceil_ms(until_end) end
local retry_ms = 0
if not allowed then retry_ms = ceil_ms(until_end) end
return { allowed and 1 or 0, floor_units(limit - count), reset_ms, retry_ms, 0 }
