import { decideFunction, fixedArguments } from './batch-script.js';
import { DECISION_BYTES } from './decision-reply.js';
import type { ScriptPlan } from './script-plan.js';
import { callTables, CALLS, operationOf, type Call } from './wire.js';

/**
 * A member's reply: the decision as it is (see `isDecisionReply`: charged as it says), or one of these
 * tags first: the decision after it (allowed) whose units the group gave back; alone, not decided (an
 * earlier member denied); the error's message after it.
 */
export const ROLLED_BACK = 0x52; // 'R'
export const NOT_ASKED = 0x4e; // 'N'
export const FAILED = 0x45; // 'E'

/** The calls a group's members make: a consume and a reservation, with or without an idempotent charge. */
export const GROUP_CALLS: readonly Call[] = CALLS.filter(
  (call) => operationOf(call) === 'c' || operationOf(call) === 'v',
);

/**
 * The Lua text that decides groups of charges, each group all-or-nothing (the rate limits of one
 * request: see `Store.chargeAll` in @rl/core), for the plans `families` (distinct, each by its script
 * calls): each family's script becomes a function as in a batch ({@link decideFunction}), and a
 * member names its family by number.
 *
 * The call: `numkeys` is the sum of the members' keys; ARGV[1] is the number of groups, then for each
 * group its number of members and its hold (the longest delay an admitted request may be held, ms;
 * `''`: no bound), then for each member its family (1-based; negative for a dry-run limit, whose
 * denial does not deny the group), its call (`'c'` or `'v'`, with `+` for an idempotent charge: see
 * `Call` in src/wire.ts), and its arguments as a batch sends them (every argument of the call, then the
 * configuration for a family sent by argument).
 *
 * A group's members are decided in order until an enforced one denies; the later ones are not asked.
 * Then, or when an enforced member's delay (rounded up to the ms, as the decision reports it) exceeds
 * the hold, every allowed member is undone in the same script, at the time and delay of its own
 * decision, as the engine would give it back (an idempotent charge's id forgotten, but a conflict's,
 * whose record is the first request's): the group took nothing. The reply: per group, one
 * string per member (see {@link ROLLED_BACK}). A member's error is its own (its
 * limit's failure policy decides it), and does not stop the others: the engine then gives back what
 * they took if the policy denies. An undo that fails leaves its member charged ('D'): the engine's own
 * give-back tries again.
 *
 * The common path does one `pcall` per member and reads one double of its reply (two with a hold): no
 * table per member and no new string; the rare path (a denial) walks the group again to undo it.
 */
export function groupLua(families: readonly ScriptPlan[]): string {
  const list = (f: (plan: ScriptPlan, i: number) => string | number): string => `{ ${families.map(f).join(', ')} }`;
  let text = callTables(GROUP_CALLS);
  families.forEach((plan, i) => {
    text += decideFunction(plan, `decide${i + 1}`);
  });
  return (
    text +
    `local DECIDE = ${list((_, i) => `decide${i + 1}`)}\n` +
    `local KEYS_OF = ${list((plan) => plan.script.numberOfKeys)}\n` +
    // An idempotent member ('c+', 'v+') of a state with keys of its own sends one key more (its remembered ids).
    `local IDEM_KEYS = ${list((plan) => (plan.compact ? 0 : 1))}\n` +
    // A member's arguments after its family, but for those of its call: the call, the field, the configuration.
    `local FIXED = ${list((plan) => 1 + fixedArguments(plan))}\n` +
    `local pcall, tostring, unpack, ceil, byte = pcall, tostring, struct.unpack, math.ceil, string.byte\n` +
    `local EPS = 1e-9\n` +
    `local function ms(x) if x <= EPS then return 0 end return ceil(x - EPS) end\n` +
    `local replies, at, k0, batch_time = {}, 2, 0, redis.call('TIME')\n` +
    // As numbers once (see batch-script.ts): not converted again by every member's arithmetic.
    `batch_time = { tonumber(batch_time[1]), tonumber(batch_time[2]) }\n` +
    `for g = 1, tonumber(ARGV[1]) do\n` +
    `  local count, hold = tonumber(ARGV[at]), tonumber(ARGV[at + 1])\n` +
    `  at = at + 2\n` +
    `  local out, first_at, first_k0, denied, held = {}, at, k0, false, 0\n` +
    `  for m = 1, count do\n` +
    `    local f, a0 = tonumber(ARGV[at]), at + 1\n` +
    `    local enforced, call = f > 0, ARGV[a0]\n` +
    `    local idem_op = IDEMPOTENT_OP[call]\n` +
    `    if not enforced then f = -f end\n` +
    `    if denied then\n` +
    `      out[m] = 'N'\n` +
    `    else\n` +
    `      local ok, reply = pcall(DECIDE[f], k0, a0, idem_op or call, idem_op ~= nil, batch_time)\n` +
    `      if ok and type(reply) == 'string' and #reply >= ${DECISION_BYTES} and byte(reply, 1) == 0 then\n` +
    // Allowed is the double 1 (its last byte 0x3F), denied 0: one byte read, no string made.
    `        if enforced then\n` +
    // Allowed is 1 (the double's last byte 0x3F), or 2 or 3 (a replay, a conflict: 0x40).
    `          local b = byte(reply, 8)\n` +
    `          if b ~= 63 and b ~= 64 then\n` +
    `            denied = true\n` +
    `          elseif hold ~= nil then\n` +
    `            local delay = ms(unpack('<d', reply, 33))\n` +
    `            if delay > held then held = delay end\n` +
    `          end\n` +
    `        end\n` +
    `        out[m] = reply\n` +
    `      else\n` +
    `        if type(reply) == 'table' then reply = tostring(reply.err or 'ERR rl: the decision failed') else reply = tostring(reply) end\n` +
    `        out[m] = 'E' .. reply\n` +
    `      end\n` +
    `    end\n` +
    `    k0 = k0 + KEYS_OF[f]\n` +
    `    if idem_op then k0 = k0 + IDEM_KEYS[f] end\n` +
    `    at = a0 + FIXED[f] + WIDTH[call]\n` +
    `  end\n` +
    // The rare path: walk the group again and undo each allowed member at its own time and delay.
    `  if denied or (hold ~= nil and held > hold) then\n` +
    `    local ma, mk = first_at, first_k0\n` +
    `    for m = 1, count do\n` +
    `      local f, a0, reply = math.abs(tonumber(ARGV[ma])), ma + 1, out[m]\n` +
    `      local idem_op = IDEMPOTENT_OP[ARGV[a0]]\n` +
    // An allowed member that charged (1, or 3: a conflict, charged as new); a replay (2) took nothing.
    `      if byte(reply, 1) == 0 and (byte(reply, 8) == 63 or (byte(reply, 8) == 64 and byte(reply, 7) == 8)) then\n` +
    // Undone with its id forgotten ('u' with IDEMPOTENT), but a conflict (3), undone as a plain charge: the record is the first request's.
    `        local ok, back = pcall(DECIDE[f], mk, a0, 'u', idem_op ~= nil and byte(reply, 8) ~= 64, batch_time, unpack('<d', reply, 41), ms(unpack('<d', reply, 33)))\n` +
    `        if ok and (back == nil or back.err == nil) then out[m] = 'R' .. reply end\n` +
    `      end\n` +
    `      mk = mk + KEYS_OF[f]\n` +
    `      if idem_op then mk = mk + IDEM_KEYS[f] end\n` +
    `      ma = a0 + FIXED[f] + WIDTH[ARGV[a0]]\n` +
    `    end\n` +
    `  end\n` +
    `  replies[g] = out\n` +
    `end\n` +
    `return replies\n`
  );
}
