-- Token bucket: a Lua port of tokenBucket().step/undo in @rl/core, operation for operation.
--
-- KEYS[1]  state: a string of two little-endian doubles (tokens, lastRefillTime)
-- ARGV[1]  operation: 'c' consume, 'p' peek (writes nothing), 'u' undo (returns nothing)
-- ARGV[2]  now in ms, or '' to use Redis TIME
-- ARGV[3]  cost   ARGV[4] expiry margin in ms
-- ARGV[5]  capacity   ARGV[6] ratePerMs (tokens per millisecond)
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }

-- EPSILON, ceil_ms, floor_units and read_now come from prelude.lua (put before this script by
-- scripts/generate-lua.mjs).

local key = KEYS[1]
local op = ARGV[1]
local now = read_now(ARGV[2])
local cost = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local capacity = tonumber(ARGV[5])
local rate = tonumber(ARGV[6])

local raw = redis.call('GET', key)

if op == 'u' then
  if raw then
    local stored_tokens, stored_last = struct.unpack('<dd', raw)
    -- More tokens recover sooner: the current expiry stays long enough.
    redis.call('SET', key, struct.pack('<dd', math.min(capacity, stored_tokens + cost), stored_last), 'KEEPTTL')
  end
  return nil
end

local tokens = capacity
local last = now
if raw then
  local stored_tokens, stored_last = struct.unpack('<dd', raw)
  -- The balance is clamped to this configuration's capacity (a capacity that shrank).
  tokens = math.min(capacity, stored_tokens)
  last = stored_last
  if now > last then
    tokens = math.min(capacity, tokens + (now - last) * rate)
    last = now
  end
end
local allowed = tokens + EPSILON >= cost
if allowed then tokens = math.max(0, tokens - cost) end
if op == 'c' then
  -- The bucket is full again (the same as no state) at last + (capacity - tokens) / rate.
  local ttl = last + (capacity - math.min(capacity, tokens)) / rate - now
  redis.call('SET', key, struct.pack('<dd', tokens, last), 'PX', math.max(1, math.ceil(ttl)) + margin)
end
-- When the clock went back, `last` is ahead of `now`: waits are counted from `last`.
local lag = last - now
local retry_ms = 0
if not allowed then retry_ms = math.max(1, ceil_ms(lag + (cost - tokens) / rate)) end
return { allowed and 1 or 0, floor_units(tokens), ceil_ms(lag + (capacity - tokens) / rate), retry_ms, 0 }
