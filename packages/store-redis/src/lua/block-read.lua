-- After the layout's block read (block-read-compact.lua or block-read-keys.lua): while the key is blocked
-- (`blocked_left` ms to the block's end), a consume runs as a peek: it charges nothing, writes nothing
-- and does not extend the block (block-reply.lua makes its reply the block's denial).
local blocked_left = 0
if blocked_until ~= nil and blocked_until > now then
  blocked_left = blocked_until - now
  if OP == 'c' or OP == 'v' then OP = 'p' end
end
