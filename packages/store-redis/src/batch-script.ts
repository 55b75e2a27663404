import { argumentDeclarationsAt, inlineDeclarations, type ScriptPlan } from './script-plan.js';

/** Bytes of a decision's reply: six doubles (see prelude.lua). */
export const DECISION_BYTES = 48;

/**
 * The Lua text that runs several decisions of one configuration (inline) or one script (by argument)
 * in one call, in the order given, each exactly as the single-decision script would run it alone: the
 * script's text becomes a function of its keys, its arguments and its operation, called once per
 * decision, each call in its own `pcall` so that one decision's error is its own reply.
 *
 * The call: `numkeys` is the sum of the decisions' keys (`plan.script.numberOfKeys` each, in order);
 * ARGV[1] is the number of decisions, then for each decision its operation ('c', 'v', 'p', 'u', 'a',
 * 'r'), the number of its arguments, and those arguments (what the single call would send after its keys).
 *
 * The reply: one string per decision, in order. Exactly {@link DECISION_BYTES} bytes: the decision;
 * empty: an operation that returns nothing (undo, release); any other length: the error's message (one
 * of 0 or 48 bytes gets a space appended, so the three never meet).
 *
 * Redis TIME is read once per batch (`BATCH_TIME`, which prelude.lua and compact-write.lua read
 * instead of calling TIME): the decisions of a batch are decided at one instant, as if they had arrived
 * together, which they did; Redis itself freezes time for key expiry while a script runs.
 *
 * Each decision is atomic as alone (a script runs alone in Redis), and the batch too: a Cluster batch
 * holds keys of one slot. The declarations of a configuration sent by argument are read per decision
 * (they follow that decision's `now`, whose place depends on its operation: see prelude.lua).
 */
export function batchLua(plan: ScriptPlan): string {
  const declarations = plan.byArgument ? argumentDeclarationsAt(plan, 'CONFIG_AT') : inlineDeclarations(plan);
  const configAt = plan.byArgument ? `local CONFIG_AT = ${plan.script.nowArg} + (OP == 'u' and 3 or OP == 'v' and 2 or 1)\n` : '';
  const k = plan.script.numberOfKeys;
  const keys = Array.from({ length: k }, (_, i) => `KEYS[base + ${i + 1}]`).join(', ');
  return (
    `local function decide(KEYS, ARGV, OP, BATCH_TIME)\n${configAt}${declarations}${plan.script.lua}end\n` +
    `local replies, at, batch_time = {}, 2, redis.call('TIME')\n` +
    `for d = 1, tonumber(ARGV[1]) do\n` +
    `  local base = (d - 1) * ${k}\n` +
    `  local op, n, args = ARGV[at], tonumber(ARGV[at + 1]), {}\n` +
    `  for j = 1, n do args[j] = ARGV[at + 1 + j] end\n` +
    `  at = at + 2 + n\n` +
    `  local ok, reply = pcall(decide, {${keys}}, args, op, batch_time)\n` +
    `  if not ok or type(reply) == 'table' then\n` +
    `    if type(reply) == 'table' then reply = reply.err or reply.ok or 'ERR rl: the decision failed' else reply = tostring(reply) end\n` +
    `    if #reply == 0 or #reply == ${DECISION_BYTES} then reply = reply .. ' ' end\n` +
    `  elseif reply == nil then\n` +
    `    reply = ''\n` +
    `  end\n` +
    `  replies[d] = reply\n` +
    `end\n` +
    `return replies\n`
  );
}
