import { IDEMPOTENCY_FINGERPRINT_LENGTH, IDEMPOTENCY_ID_LENGTH, UnsupportedError, type IdempotentCharge } from '@rl/core/store';

/**
 * The store's wire protocol with its scripts, declared once: what each operation's call sends after
 * its keys. Everything else is derived from these two tables: the arguments `RedisStore` sends
 * ({@link appendArguments}), the positions the store declares before every script (`ARG_OWN`,
 * `ARG_NOW`, …: {@link argumentPositions}, read by src/lua/prelude.lua), where a configuration sent by
 * argument starts ({@link configurationStart}), and the batch script's widths (batch-script.ts).
 */

/**
 * One script per operation: consume, reserve, peek, undo, settle; acquire and release for a lease
 * limit; and the idempotent consume ('i'), reservation ('j') and the undo that forgets its id ('k').
 */
export type Operation = 'c' | 'v' | 'p' | 'u' | 's' | 'a' | 'r' | 'i' | 'j' | 'k';

/** The operations of an idempotent charge: a state with keys of its own gets one key more, its remembered ids (`IDEM_KEY`). */
export const IDEMPOTENT_OPERATIONS: ReadonlySet<Operation> = new Set(['i', 'j', 'k']);

/**
 * The arguments of a call after its keys (and, in the compact layout, after the field, `ARGV[1]`), in
 * this order, each at one position for every operation:
 * - `own`: the cost (absent: 1), or the lease id of an acquire or release;
 * - `now`: the caller's time in ms (absent: Redis `TIME`);
 * - `maxDelay`: a reservation's longest wait in ms;
 * - `chargedAt`, `delay`: an undo's (or a settle's) time of the charge it gives back and that
 *   charge's delay (a reservation's; absent: none);
 * - `actual`, `maxDebt`: a settle's real cost and how far past its limit it may charge (`own` is then
 *   the cost the charge took; see `Settlement` in @rl/core);
 * - `idem`, `fingerprint`, `idemTtl`, `idemMax`, `idemReplays`: an idempotent charge's digested id and
 *   fingerprint, how long (ms) and how many ids per key its decision is remembered, and how many times
 *   one decision is answered again (see `IdempotentCharge`); the undo that forgets an id sends the id
 *   alone.
 */
export const ARGUMENTS = ['own', 'now', 'maxDelay', 'chargedAt', 'delay', 'actual', 'maxDebt', 'idem', 'fingerprint', 'idemTtl', 'idemMax', 'idemReplays'] as const;
export type Argument = (typeof ARGUMENTS)[number];

/**
 * How many of {@link ARGUMENTS} each operation sends: all of them up to the last it reads. A call by
 * argument then sends its configuration's numbers, from {@link configurationStart} on.
 */
export const OPERATION_WIDTH: Readonly<Record<Operation, number>> = Object.freeze({ c: 2, p: 2, a: 2, r: 2, v: 3, u: 5, s: 7, i: 12, j: 12, k: 8 });

/** The Lua local that holds the position of each argument, as the store declares it before every script. */
const POSITION_NAMES: Readonly<Record<Argument, string>> = {
  ...{ own: 'ARG_OWN', now: 'ARG_NOW', maxDelay: 'ARG_MAX_DELAY', chargedAt: 'ARG_CHARGED_AT', delay: 'ARG_DELAY' },
  ...{ actual: 'ARG_ACTUAL', maxDebt: 'ARG_MAX_DEBT', idem: 'ARG_IDEM', fingerprint: 'ARG_FINGERPRINT', idemTtl: 'ARG_IDEM_TTL', idemMax: 'ARG_IDEM_MAX', idemReplays: 'ARG_IDEM_REPLAYS' },
};

/** The Redis keys a call of `op` sends for a script of `numberOfKeys` keys: one more for an idempotent operation on a state with keys of its own. */
export function keysOf(numberOfKeys: number, compact: boolean, op: Operation): number {
  return !compact && IDEMPOTENT_OPERATIONS.has(op) ? numberOfKeys + 1 : numberOfKeys;
}

/** The `ARGV` index of the first of {@link ARGUMENTS}: after the field in the compact layout. */
export function firstArgument(compact: boolean): number {
  return compact ? 2 : 1;
}

/** `local ARG_OWN, ARG_NOW, … = 2, 3, …`: the position of every argument (see prelude.lua), the same for every operation. */
export function argumentPositions(compact: boolean): string {
  const first = firstArgument(compact);
  return `local ${ARGUMENTS.map((a) => POSITION_NAMES[a]).join(', ')} = ${ARGUMENTS.map((_, i) => first + i).join(', ')}\n`;
}

/** The `ARGV` index where a configuration sent by argument starts, after everything `op` sends. */
export function configurationStart(compact: boolean, op: Operation): number {
  return firstArgument(compact) + OPERATION_WIDTH[op];
}

/**
 * Appends `op`'s arguments to `args` (which holds the keys, and the field): `values` in the order of
 * {@link ARGUMENTS}, `undefined` for an absent one, up to the operation's width. An absent argument is
 * sent as `''`; with `trim` (an inline call, whose configuration is in the script) the absent ones at
 * the end are left out, which the scripts read as absent too.
 */
export function appendArguments(args: string[], op: Operation, values: readonly (string | undefined)[], trim: boolean): void {
  const width = OPERATION_WIDTH[op];
  let end = args.length;
  for (let i = 0; i < width; i++) {
    const value = values[i];
    args.push(value ?? '');
    if (value !== undefined) end = args.length;
  }
  if (trim) args.length = end;
}

/** An idempotent charge's arguments after a reservation's (see {@link ARGUMENTS}): none without one; its digests checked first. */
export function idempotentValues(charge: IdempotentCharge | undefined): (string | undefined)[] {
  if (charge !== undefined && (charge.id.length !== IDEMPOTENCY_ID_LENGTH || charge.fingerprint.length !== IDEMPOTENCY_FINGERPRINT_LENGTH)) {
    throw new UnsupportedError(`RedisStore: an idempotent charge's id and fingerprint are digests of ${IDEMPOTENCY_ID_LENGTH} and ${IDEMPOTENCY_FINGERPRINT_LENGTH} characters (see IdempotentCharge).`);
  }
  return charge === undefined ? [] : [undefined, undefined, undefined, undefined, charge.id, charge.fingerprint, String(charge.ttlMs), String(charge.maxIds), String(charge.maxReplays)];
}

/** A cost as an argument: absent when 1 (the scripts read an absent cost as 1). */
export function costOf(cost: number): string | undefined {
  return cost === 1 ? undefined : String(cost);
}

/** A time (or a delay) as an argument: absent when undefined. */
export function timeOf(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : String(ms);
}
