-- Included (`--#include window-undo.lua`, see scripts/generate-lua.mjs) by the window algorithms of the
-- compact layout, whose state is (kept, windowStart, …, currentCount): the undo of an earlier consume
-- gives `cost` back to the current window's count, the last double of the state, when the stored
-- window is still the current one (or a later one, after a clock went back); the other doubles are
-- kept as they are. A block of statements, not a function (see compact-write.lua).
if OP == 'u' then
  if raw then
    local _, stored_start = struct.unpack('<dd', raw)
    if stored_start >= math.floor(now / WINDOW) * WINDOW then
      local count_at = STATE_BYTES - 8
      local stored_count = struct.unpack('<d', raw, count_at + 1)
      redis.call('HSET', bucket, field, raw:sub(1, count_at) .. struct.pack('<d', math.max(0, stored_count - cost)))
    end
  end
  return nil
end
