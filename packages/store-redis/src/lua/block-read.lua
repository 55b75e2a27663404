-- After the layout's block read (block-read-compact.lua or block-read-keys.lua), before the remembered
-- ids are read (idem-read.lua): while the key is blocked (`blocked_left` ms to the block's end), a
-- consume runs as a peek: it charges nothing, writes nothing and does not extend the block
-- (block-reply.lua makes its reply the block's denial). An idempotent charge is then no idempotent
-- charge (`idem_id` nil): a ban or a lockout outranks a replay, its id is neither looked up nor
-- written, and its record stays as it was, so that a retry once the block ends replays.
local blocked_left = 0
if blocked_until ~= nil and blocked_until > now then
  blocked_left = blocked_until - now
  if OP == 'c' or OP == 'v' then OP, idem_id = 'p', nil end
end
