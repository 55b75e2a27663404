import type { Verb } from './wire.js';

/** A call as it went on the wire: `[id, verb, ...arguments]` (wire.ts's table). */
export type WireCall = readonly unknown[];

/** A call to send: its verb and arguments (the `id` is the sender's). */
export interface GiveBackCall {
  readonly key: string;
  readonly verb: Verb;
  readonly args: unknown[];
}

/** What a late grant of a charge was charged at, read from its wire answer (`Charged`): undefined when it took nothing. */
function grantOf(answer: unknown): { at: number; delayMs: number } | undefined {
  const charged = answer as { took?: unknown; decision?: { allowed?: unknown; at?: unknown; delayMs?: unknown } };
  const decision = charged?.decision;
  if (charged?.took !== 'charged' || decision?.allowed !== true || typeof decision.at !== 'number') return undefined;
  return { at: decision.at, delayMs: typeof decision.delayMs === 'number' ? decision.delayMs : 0 };
}

/** The give-back of one wire charge (`{ key, scope, local, algorithm, cost, idempotency }`) granted late, or none for an idempotent one. */
function giveBackOf(wireCharge: unknown, answer: unknown): GiveBackCall | undefined {
  const charge = wireCharge as { key: string; scope?: string; local?: string; algorithm: unknown; cost: number };
  // An idempotent charge granted late stays (as the limiter keeps one): its retry, with the same id, is answered by it.
  if ((wireCharge as { idempotency?: unknown }).idempotency !== undefined) return undefined;
  const grant = grantOf(answer);
  if (grant === undefined) return undefined;
  const back = {
    key: charge.key,
    ...(charge.scope === undefined ? {} : { scope: charge.scope, local: charge.local }),
    algorithm: charge.algorithm,
    cost: charge.cost,
    chargedAt: grant.at,
    ...(grant.delayMs > 0 ? { delayMs: grant.delayMs } : {}),
  };
  return { key: charge.key, verb: 'giveBack', args: [back, null] };
}

/**
 * What undoes the grant in the answer `value` to `call`, a call the store had already failed (its
 * timeout passed): a grant the caller, told the call failed, never gives back. A charge admitted late
 * is given back to its window (`chargedAt`, a reservation's `delayMs`), each charge of a `chargeAll`
 * alike, a permit acquired late released; an idempotent charge stays (a retry with its id is answered
 * by it). What is not a grant stays as the holder did it: a denial counted (`countDenied`), a settle,
 * a ban, an override, a reset (the caller may call them again). `value` is the holder's answer.
 */
export function lateGiveBacks(call: WireCall, value: unknown): GiveBackCall[] {
  const [, verb, ...args] = call;
  if (verb === 'charge') {
    const back = giveBackOf(args[0], value);
    return back === undefined ? [] : [back];
  }
  if (verb === 'chargeAll') {
    const charges = args[0] as readonly (readonly [unknown, unknown])[];
    if (!Array.isArray(value)) return [];
    return charges.flatMap(([wireCharge], i) => {
      const entry = value[i] as unknown;
      if (!Array.isArray(entry) || entry[0] !== 1) return [];
      return giveBackOf(wireCharge, entry[1]) ?? [];
    });
  }
  if (verb === 'acquire') {
    const [key, algorithm, leaseId] = args as [string, unknown, string];
    if ((value as { allowed?: unknown } | null)?.allowed !== true) return [];
    return [{ key, verb: 'release', args: [key, algorithm, leaseId] }];
  }
  return [];
}
