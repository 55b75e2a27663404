-- Leaky bucket as GCRA (meter or shape): a Lua port of leakyBucket().step/undo in @rl/core.
--
-- KEYS[1]  state: a string of one little-endian double, tat (the time the bucket or queue is empty)
-- ARGV[1]  operation: 'c' consume, 'p' peek (writes nothing), 'u' undo (returns nothing)
-- ARGV[2]  now in ms, or '' to use Redis TIME
-- ARGV[3]  cost   ARGV[4] expiry margin in ms
-- ARGV[5]  capacity   ARGV[6] emissionMs (ms per unit)   ARGV[7] shape ('1' or '0')
-- Returns  { allowed (1/0), remaining, resetMs, retryAfterMs, delayMs }

-- EPSILON, ceil_ms, floor_units and read_now come from prelude.lua (put before this script by
-- scripts/generate-lua.mjs).

local key = KEYS[1]
local op = ARGV[1]
local now = read_now(ARGV[2])
local cost = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local capacity = tonumber(ARGV[5])
local emission = tonumber(ARGV[6])
local shape = ARGV[7] == '1'
local horizon = capacity * emission

local raw = redis.call('GET', key)

if op == 'u' then
  if raw then
    local stored_tat = struct.unpack('<d', raw)
    -- An earlier tat recovers sooner: the current expiry stays long enough.
    redis.call('SET', key, struct.pack('<d', math.max(now, stored_tat - cost * emission)), 'KEEPTTL')
  end
  return nil
end

-- Clamp the backlog to this configuration's horizon (a capacity that shrank).
local tat = now
if raw then tat = math.min(struct.unpack('<d', raw), now + horizon) end
local start = now
if tat > now then start = tat end
local next_tat = start + cost * emission
local allowed = next_tat - now <= horizon + EPSILON
local kept = tat
if allowed then kept = next_tat end
if op == 'c' then
  -- The bucket is empty again (the same as no state) at `kept`.
  local ttl = kept - now
  redis.call('SET', key, struct.pack('<d', kept), 'PX', math.max(1, math.ceil(ttl)) + margin)
end
local backlog = math.max(0, kept - now)
local retry_ms = 0
if not allowed then retry_ms = math.max(1, ceil_ms(next_tat - horizon - now)) end
local delay_ms = 0
if allowed and shape then delay_ms = ceil_ms(start - now) end
return { allowed and 1 or 0, floor_units((horizon - backlog) / emission), ceil_ms(backlog), retry_ms, delay_ms }
