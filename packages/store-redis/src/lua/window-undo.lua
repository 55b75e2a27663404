-- Included (`--#include window-undo.lua`, see scripts/generate-lua.mjs) by the window algorithms of the
-- compact layout, whose state is (kept, windowStart, …, currentCount), the current count the last
-- double and, for the sliding counter, the previous window's count before it (its offset in
-- `previous_at`, which the including script declares; nil for the fixed and calendar windows): the
-- undo of an earlier consume, a port of the TS `undo` of them all. The including script also declares
-- where windows start: `current_start`, the window of `now`; `charged_start`, the window of the
-- charge's slot (nil without `charged_at`); and for the sliding counter `charged_next`, the window
-- after it. The other doubles are kept as they are. A block of statements, not a function (see
-- compact-write.lua).
--
-- With the time of the charge (`charged_at`, and `charged_delay` for a reservation, whose slot is their
-- sum; see prelude.lua): `cost` goes back to the count of the window that holds its slot, the current
-- one, or the previous one where the state keeps it, and to no other. Without:
-- to the current count while the stored window is still the current one (or a later one, after a
-- clock went back). Never below 0.
if OP == 'u' or settle_back then
  if raw then
    local _, stored_start = struct.unpack('<dd', raw)
    local count_at = nil
    if charged_at == nil then
      if stored_start >= current_start then count_at = STATE_BYTES - 8 end
    else
      if stored_start == charged_start then
        count_at = STATE_BYTES - 8
      elseif previous_at ~= nil and stored_start == charged_next then
        count_at = previous_at
      end
    end
    if count_at ~= nil then
      local stored_count = struct.unpack('<d', raw, count_at + 1)
      redis.call('HSET', bucket, field, raw:sub(1, count_at) .. struct.pack('<d', math.max(0, stored_count - cost)) .. raw:sub(count_at + 9))
    end
  end
  return nil
end
