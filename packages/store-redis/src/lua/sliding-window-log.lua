-- Sliding window log (exact): a Lua port of slidingWindowLog().step/undo in @rl/core, operation for
-- operation. The records live in a list, oldest first: the stored times never go back, so insertion
-- order is time order, and records with equal times stay distinct elements (each keeps its own cost).
--
-- KEYS[1]  the records: a list of strings of two little-endian doubles (time, cost); a negative cost is
--          a denial recorded by countDenied (its units count the same; consecutive ones share a record)
-- KEYS[2]  the metadata: a string of one little-endian double, the running sum of the records' costs,
--          kept while the log holds FIRST records or more (same expiry as the log) and deleted when it
--          drops below. A shorter log is read whole and its sum taken from its records, oldest first,
--          as the TS step does for a log that short.
-- Configuration (see prelude.lua): LIMIT, WINDOW (ms), COUNT_DENIED (1 or 0).
-- ARGV     the arguments of src/wire.ts (the cost, now, a reservation's maxDelay, an undo's time of
--          the charge and delay), read by the prelude and here (the cost)
-- Returns  the decision: six exact doubles (allowed, remaining, then ms to the reset, to a retry, of the delay, and the `now` it decided at; see prelude.lua); undo and settle return nothing.
--
-- A decision on a short log (the common case) takes TIME, LRANGE, RPUSH and PEXPIRE (and LTRIM when
-- records leave the window); a long one adds LLEN, LINDEX, GET and SET of the metadata. An undo reads
-- the log from its tail and stops at the record it removes (LRANGE, LREM, PTTL; GET and SET of the
-- metadata of a long log): a give-back costs what a decision does, however long the log.
--
-- Lockouts: scripts/generate-lua.mjs also makes `sliding-window-log-block` of this script (see block-reply.lua).
--#blockable

-- A blocking variant reads the key's block here (see prelude-compact.lua), before the remembered ids.
--#block-read
local log_key = KEYS[1]
local sum_key = KEYS[2]
local cost = ARGV[ARG_OWN]
if cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
-- An idempotent charge's remembered ids: a key of their own, KEYS[IDEM_KEY] (see idem-read.lua).
local idem_raw = nil
if idem_id ~= nil then idem_raw = redis.call('GET', KEYS[IDEM_KEY]) end
--#include idem-read.lua
if idem_id ~= nil and OP == 'u' then
  --#include idem-write-keys.lua
end
local limit = LIMIT
local window = WINDOW
local count_denied = COUNT_DENIED == 1

-- The first records, read once: a log shorter than FIRST is then known whole, without LLEN, LINDEX
-- or the metadata. Set to nil once the list changes.
local FIRST = 8
local first = redis.call('LRANGE', log_key, 0, FIRST - 1)
local count = #first
local whole = count < FIRST
if not whole then count = redis.call('LLEN', log_key) end
local first_newest = first[#first]

--- Calls visit(time, cost) for the records, oldest first, until it returns true. Records are read in
--- chunks that start with `first` and grow, so a decision reads only about as many records as it needs.
local function each_record(visit)
  local from = 0
  local size = FIRST
  local chunk = first or redis.call('LRANGE', log_key, 0, FIRST - 1)
  while true do
    for i = 1, #chunk do
      local time, record_cost = struct.unpack('<dd', chunk[i])
      if visit(time, record_cost) then return end
    end
    if #chunk < size then return end
    from = from + size
    if size < 256 then size = size * 2 end
    chunk = redis.call('LRANGE', log_key, from, from + size - 1)
  end
end

local sum = 0
if whole then
  for i = 1, count do
    local _, record_cost = struct.unpack('<dd', first[i])
    sum = sum + math.abs(record_cost)
  end
elseif count > 0 then
  local raw_sum = redis.call('GET', sum_key)
  if raw_sum then
    sum = struct.unpack('<d', raw_sum)
  else
    -- The metadata was lost (evicted): rebuild it from the records.
    each_record(function(_, record_cost) sum = sum + math.abs(record_cost) end)
  end
end

if OP == 'u' or OP == 's' then
  -- Find the record of this cost made at the time of the charge (`charged_at`, see prelude.lua; a
  -- reservation's record is at its slot, `charged_at + charged_delay`, known to the ms: the newest
  -- record of its cost within the ms before it), nothing once that time has left the window; without
  -- it, the newest record of this cost: the one a rollback right after its charge admitted (or one
  -- just like it). The log is read from its tail in chunks that grow, so this reads about as many
  -- records as lie after the one it finds (those recorded since the consume), not the whole log.
  -- An undo removes it; a settle gives it the actual cost, `settle_actual` (see prelude.lua), taken
  -- above the estimate only up to LIMIT + max_debt in all (the live sum), and removes it for 0.
  -- An undo with the time of its charge that finds no record of its cost there gives back part of the
  -- newest record made then with a larger one (a quota lease's block, its unused units given back).
  -- The TS twin is `recordOf` with `undo` and `settle` of slidingWindowLog().
  local from = nil
  if charged_at ~= nil then
    charged_at = charged_at + charged_delay
    from = charged_at
    if charged_delay > 0 then from = charged_at - 1 end
  end
  if charged_at ~= nil and charged_at <= now - window then return nil end
  --- The log's sum is `sum + change` now: the metadata kept (or dropped for a short log) to match.
  local function changed_sum(change)
    -- The metadata lives as long as the log (SET without an expiry would keep it forever).
    local ttl = redis.call('PTTL', log_key)
    if count < FIRST or ttl <= 0 then
      redis.call('DEL', sum_key)
    else
      redis.call('SET', sum_key, struct.pack('<d', sum + change), 'PX', ttl)
    end
  end
  local part_at, part_time, part_cost = nil, 0, 0
  local records = first
  local seen = 0
  local size = FIRST
  local past = false
  while seen < count do
    if not whole then
      if size > count - seen then size = count - seen end
      records = redis.call('LRANGE', log_key, -(seen + size), -(seen + 1))
    end
    for i = #records, 1, -1 do
      local record_time, record_cost = struct.unpack('<dd', records[i])
      -- Times never decrease along the log: past the charge's time, no record can be its.
      if from ~= nil and record_time < from then
        past = true
        break
      end
      local at_charge = charged_at == nil or (record_time <= charged_at and (charged_delay <= 0 or record_time > from))
      if record_cost == cost and at_charge then
        local kept_cost = 0
        if OP == 's' then
          kept_cost = settle_actual
          if settle_actual > cost then
            local used = sum
            each_record(function(time, live_cost)
              if time > now - window then return true end
              used = used - math.abs(live_cost)
              return false
            end)
            kept_cost = cost + math.max(0, math.min(settle_actual - cost, limit + max_debt - used))
          end
        end
        if kept_cost == 0 then
          -- Scanning from the tail found the last element equal to records[i]: LREM from the tail
          -- removes exactly it, and stops there.
          redis.call('LREM', log_key, -1, records[i])
          count = count - 1
        else
          redis.call('LSET', log_key, -(seen + 1 + #records - i), struct.pack('<dd', record_time, kept_cost))
        end
        changed_sum(kept_cost - cost)
        return nil
      end
      if OP == 'u' and charged_at ~= nil and part_at == nil and at_charge and record_cost > cost then
        part_at, part_time, part_cost = -(seen + 1 + #records - i), record_time, record_cost
      end
    end
    if past or whole or #records == 0 then break end
    seen = seen + #records
    if size < 256 then size = size * 2 end
  end
  if part_at ~= nil then
    redis.call('LSET', log_key, part_at, struct.pack('<dd', part_time, part_cost - cost))
    changed_sum(-cost)
  end
  return nil
end

local commit = OP == 'c' or OP == 'v'
-- The window at `now` is (now - window, now]: a record exactly one window old no longer counts.
local edge = now - window
local used = sum
local dropped = 0
-- The visit (a closure per call) only when the oldest record has left the window: on the common path
-- (an empty log, or its oldest record live) nothing is dropped, and the first LRANGE tells it.
if first == nil or (#first > 0 and struct.unpack('<d', first[1]) <= edge) then
  each_record(function(time, record_cost)
    if time > edge then return true end
    used = used - math.abs(record_cost)
    dropped = dropped + 1
    return false
  end)
end
if commit then
  if dropped == count then
    used = 0
  end
  if dropped > 0 then
    redis.call('LTRIM', log_key, dropped, -1)
    first = nil
  end
  count = count - dropped
  sum = used
end
local room = used + cost <= limit + EPSILON
local newest = -math.huge
local newest_cost = 0
if count > 0 then
  -- Trimming drops from the head: the newest record of a log read whole is its last.
  local raw_newest
  if whole then raw_newest = first_newest else raw_newest = redis.call('LINDEX', log_key, -1) end
  newest, newest_cost = struct.unpack('<dd', raw_newest)
end
-- The earliest time enough of the oldest live records at `now` have left the window for `cost` more
-- units, `recorded` being the live sum (`now` when none need to leave): fitTime of the TS step. Made
-- only when there is no room (its two callers, a reservation that must wait and a denial, have none):
-- a closure made per call costs an admitted decision that never calls it.
local fit_time = nil
if not room then
  fit_time = function(recorded)
    local freed = 0
    local fit = now
    each_record(function(time, record_cost)
      if time <= edge then return false end
      freed = freed + math.abs(record_cost)
      if recorded - freed + cost <= limit + EPSILON then
        fit = time + window
        return true
      end
      return false
    end)
    return fit
  end
end
local allowed
local slot = math.max(now, newest)
if max_delay == nil then
  -- A consume takes only what every record leaves, the reservations' included.
  allowed = room
else
  -- A reservation: the earliest time it fits, never before the newest record.
  if not room then slot = math.max(slot, fit_time(used)) end
  allowed = slot - now <= max_delay + EPSILON
end
local recording = allowed or (count_denied and max_delay == nil)
local last = newest
if commit and recording then
  last = slot
  if not allowed and count > 0 and newest_cost < 0 then
    -- Consecutive counted denials share one record, which moves to `last`: a flood adds no records,
    -- and the merged units leave the window later, never sooner.
    redis.call('LSET', log_key, -1, struct.pack('<dd', last, newest_cost - cost))
    first = nil
  else
    local recorded_cost = cost
    if not allowed then recorded_cost = -cost end
    redis.call('RPUSH', log_key, struct.pack('<dd', last, recorded_cost))
    first = nil
    count = count + 1
  end
  sum = sum + cost
end
local after = used
if recording then after = used + cost end
-- A peek of a cost reports the reset as if its request were recorded (as `remaining` counts it).
if recording and not commit and cost > 0 then last = slot end

local retry_ms = 0
if not allowed then
  if max_delay ~= nil then
    -- When a reservation with this maxDelay fits.
    retry_ms = slot - now - max_delay
  else
    -- The earliest time enough of the oldest live records have left the window.
    local recorded = used
    if commit and count_denied then recorded = used + cost end
    retry_ms = fit_time(recorded) - now
  end
end

if commit then
  if count > 0 then
    -- The log is the same as no log one window after its newest record.
    -- `last` is the newest record's time: the one just recorded, or the newest kept one.
    local ttl = math.max(1, math.ceil(last + window - now)) + margin
    redis.call('PEXPIRE', log_key, ttl)
    if count >= FIRST then redis.call('SET', sum_key, struct.pack('<d', sum), 'PX', ttl) end
  end
  -- A long log that drops below FIRST records deletes its metadata: the key exists only while it is
  -- current, and lives exactly as long as the log.
  if count < FIRST and not whole then redis.call('DEL', sum_key) end
end

local reset_ms = 0
if after > EPSILON and last > -math.huge then reset_ms = last + window - now end
local delay_ms = 0
if allowed and max_delay ~= nil then delay_ms = slot - now end
return struct.pack('<dddddd', allowed and 1 or 0, limit - after, reset_ms, retry_ms, delay_ms, now)
