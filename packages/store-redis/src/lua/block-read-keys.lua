-- The lockout of a blocking variant (see block-read-compact.lua), for a state with keys of its own: the
-- block is a key of its own in the state's hash tag, the last of KEYS (`:block`), holding one double,
-- `blocked_until` (on the caller's clock), and expiring with the block (plus the margin). Read at the
-- script's mark `--#block-read` (before the remembered ids), then block-read.lua.
-- A ban (`Store.ban`) is the same key with a second double, 1: `banned`.
local blocked_until, banned = nil, false
if OP ~= 'u' and OP ~= 's' then
  local block_raw = redis.call('GET', KEYS[3])
  if block_raw and #block_raw >= 8 then
    blocked_until = struct.unpack('<d', block_raw)
    banned = #block_raw == 16
  end
end
