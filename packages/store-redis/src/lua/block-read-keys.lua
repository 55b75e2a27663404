-- The lockout of a blocking variant (see block-read-compact.lua), for a state with keys of its own: the
-- block is a key of its own in the state's hash tag, the last of KEYS (`:block`), holding one double,
-- the time the block ends on the caller's clock, and expiring with the block (plus the margin).
local blocked_left = 0
if OP ~= 'u' then
  local block_raw = redis.call('GET', KEYS[3])
  if block_raw and #block_raw == 8 then
    local blocked_until = struct.unpack('<d', block_raw)
    if blocked_until > now then
      blocked_left = blocked_until - now
      if OP == 'c' then OP = 'p' end
    end
  end
end
