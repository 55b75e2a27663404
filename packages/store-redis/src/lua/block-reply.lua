-- The reply of a blocking variant (see block-read-compact.lua): the script's own final reply, taken as
-- `r_allowed, r_remaining, r_reset, r_retry, r_delay` (the generator puts its five values here), then
-- the lockout. While blocked: denied, nothing remaining, the retry at the block's end and the reset
-- no sooner, no delay. A consume the script denied starts the block (written here, in the same call):
-- the retry is the whole block. Exact values, rounded by the store as every reply (the TS twin is
-- `BlockTable.decide` and `blockedDecision` in @rl/core).
-- A ban's denial says so with a delay of -1 (a denial's delay is otherwise 0; the store reads it as
-- the reason 'blocked'). BLOCK_MS 0 (a script that checks bans and has no lockout) starts no block.
if blocked_left > 0 then
  r_allowed, r_remaining, r_retry, r_delay = 0, 0, blocked_left, banned and -1 or 0
  block_retry = blocked_left
  if r_reset < blocked_left then r_reset = blocked_left end
elseif BLOCK_MS > 0 and r_allowed == 0 and (OP == 'c' or OP == 'v') then
  local blocked_until = now + BLOCK_MS
  --#block-write
  r_remaining, r_retry, r_delay = 0, BLOCK_MS, 0
  block_retry = BLOCK_MS
  if r_reset < BLOCK_MS then r_reset = BLOCK_MS end
end
return struct.pack('<dddddd', r_allowed, r_remaining, r_reset, r_retry, r_delay, now)
