import { argumentDeclarationsAt, inlineDeclarations, type ScriptPlan } from './script-plan.js';
import { callTables, firstArgument } from './wire.js';

/**
 * The Lua text that runs several decisions of one configuration (inline) or one script (by argument)
 * in one call, in the order given, each exactly as the single-decision script would run it alone: the
 * script's text becomes a function of where its keys and arguments start, its operation and the
 * batch's time, called once per decision, each call in its own `pcall` so that one decision's error
 * is its own reply. The function reads its keys and arguments in place (`KEYS[K0 + i]`,
 * `ARGV[A0 + i]`): no table is made per decision.
 *
 * The call: `numkeys` is the sum of the decisions' keys (`plan.script.numberOfKeys` each, in order);
 * ARGV[1] is the number of decisions, then for each decision its call (its operation, 'c', 'v', 'p',
 * 'u', 's', 'a', 'r', and `+` after 'c', 'v' or 'u' for one with an idempotent charge: see `Call` in
 * src/wire.ts) and its arguments, all of them (what a call by argument sends: the field in the compact
 * layout, every argument of the call, `''` for what is absent; then the configuration for a script
 * sent by argument, none for an inline configuration). The widths and the operation of each call come
 * from the protocol's table ({@link callTables}), as Lua tables the loop reads; a call with an
 * idempotent charge on a state with keys of its own sends one key more (its remembered ids).
 *
 * The reply: one string per decision, in order. A decision (see `isDecisionReply`: at least 48
 * bytes, the first 0); empty: an operation that returns nothing (undo,
 * release); anything else: the error's message (one that is empty or starts with a NUL byte gets a
 * space put first, so the three never meet).
 *
 * Redis TIME is read once per batch (`BATCH_TIME`, its two strings read as numbers once, which prelude.lua
 * and compact-write.lua read instead of calling TIME): the decisions of a batch are decided at one instant, as if they had arrived
 * together, which they did; Redis itself freezes time for key expiry while a script runs.
 *
 * Each decision is atomic as alone (a script runs alone in Redis), and the batch too: a Cluster batch
 * holds keys of one slot. The declarations of a configuration sent by argument are read per decision
 * (they follow that decision's arguments, whose number depends on its operation).
 */
export function batchLua(plan: ScriptPlan): string {
  return (
    callTables() +
    decideFunction(plan, 'decide') +
    `local pcall, tostring = pcall, tostring\n` +
    // TIME's two strings as numbers once per batch: a decision's arithmetic on them would convert both
    // strings (a strtod each) again in every decision (0.14 µs of a decision's 1.8: bench/README.md, issue 26 part 3).
    `local replies, at, k0, batch_time = {}, 2, 0, redis.call('TIME')\n` +
    `batch_time = { tonumber(batch_time[1]), tonumber(batch_time[2]) }\n` +
    `for d = 1, tonumber(ARGV[1]) do\n` +
    `  local call = ARGV[at]\n` +
    // A call is its operation, but for one with an idempotent charge ('c+': 'c' with IDEMPOTENT true).
    `  local idem_op = IDEMPOTENT_OP[call]\n` +
    `  local ok, reply = pcall(decide, k0, at, idem_op or call, idem_op ~= nil, batch_time)\n` +
    // A decision is a string (indexing it gives nil), nothing, or an error: raised, or returned as
    // {err = message} (redis.error_reply).
    `  if not ok or (reply ~= nil and reply.err ~= nil) then\n` +
    `    if type(reply) == 'table' then reply = tostring(reply.err or 'ERR rl: the decision failed') else reply = tostring(reply) end\n` +
    `    if #reply == 0 or string.byte(reply, 1) == 0 then reply = ' ' .. reply end\n` +
    `  elseif reply == nil then\n` +
    `    reply = ''\n` +
    `  end\n` +
    `  replies[d] = reply\n` +
    `  k0 = k0 + ${plan.script.numberOfKeys}\n` +
    // A state with keys of its own takes one key more for a call with an idempotent charge (its remembered ids).
    (plan.compact ? '' : `  if idem_op then k0 = k0 + 1 end\n`) +
    `  at = at + ${fixedArguments(plan) + 1} + WIDTH[call]\n` +
    `end\n` +
    `return replies\n`
  );
}

/**
 * `local function <name>(K0, A0, OP, IDEMPOTENT, BATCH_TIME)`: the plan's script as a function of where
 * its keys and arguments start (`KEYS[K0 + i]`, `ARGV[A0 + i]`, `ARGV[A0]` its call), its operation,
 * whether the call carries an idempotent charge, and the batch's time; a configuration sent by argument
 * is read after the call's arguments, whose number the script's `WIDTH` table gives.
 */
export function decideFunction(plan: ScriptPlan, name: string): string {
  const declarations = plan.byArgument ? argumentDeclarationsAt(plan, 'CONFIG_AT') : inlineDeclarations(plan);
  // The configuration follows the arguments of the call sent (`ARGV[A0]`), which a group's own undo
  // (OP 'u', with UNDO_AT and UNDO_DELAY) shares with the consume it gives back.
  const configAt = plan.byArgument ? `local CONFIG_AT = ${firstArgument(plan.compact)} + WIDTH[ARGV[A0]]\n` : '';
  // The body reads its own keys and arguments, wherever they start in the batch's.
  const body = `${declarations}${plan.lua}`.replace(/\bKEYS\[/g, 'KEYS[K0 + ').replace(/\bARGV\[/g, 'ARGV[A0 + ');
  return `local function ${name}(K0, A0, OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY)\n${configAt}${body}end\n`;
}

/** A decision's arguments after its call and before the call's own: the field (compact); plus after them the configuration (by argument). */
export function fixedArguments(plan: ScriptPlan): number {
  return firstArgument(plan.compact) - 1 + (plan.byArgument ? plan.values.length : 0);
}
