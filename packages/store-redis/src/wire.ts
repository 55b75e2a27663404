import {
  IDEMPOTENCY_FINGERPRINT_LENGTH,
  IDEMPOTENCY_ID_LENGTH,
  UnsupportedError,
  type Charge,
  type GiveBack,
  type IdempotentCharge,
} from '@rl/core/store';

/**
 * The store's wire protocol with its scripts, declared once: what each call sends after its keys.
 * Everything else is derived from the two tables below ({@link ARGUMENTS}, {@link OPERATIONS}): the
 * arguments `RedisStore` sends ({@link appendArguments}), the positions the store declares before
 * every script (`ARG_OWN`, `ARG_NOW`, …: {@link argumentPositions}, read by src/lua/prelude.lua), where
 * a configuration sent by argument starts ({@link configurationStart}), the keys of a call
 * ({@link keysOf}), and the tables the batch and group scripts read ({@link callTables}).
 */

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
export const ARGUMENTS = [
  'own',
  'now',
  'maxDelay',
  'chargedAt',
  'delay',
  'actual',
  'maxDebt',
  'idem',
  'fingerprint',
  'idemTtl',
  'idemMax',
  'idemReplays',
] as const;
export type Argument = (typeof ARGUMENTS)[number];

/** The index of the `idem` argument in a call's values: given, the call carries an idempotent charge. */
export const IDEM_AT = ARGUMENTS.indexOf('idem');

/**
 * The operations, one script each: consume, reserve, peek, undo (a give-back), settle; acquire and
 * release for a lease limit.
 */
export type Operation = 'c' | 'v' | 'p' | 'u' | 's' | 'a' | 'r';

/** The operations that can carry an idempotent charge: a consume, a reservation, and the undo that forgets its id. */
export type IdempotentOperation = 'c' | 'v' | 'u';

/** What one operation sends: the last of {@link ARGUMENTS} it reads, and with an idempotent charge the last it reads then. */
interface OperationWire {
  readonly through: Argument;
  readonly idempotentThrough?: Argument;
}

/**
 * What each operation sends after its keys: all of {@link ARGUMENTS} up to the last it reads
 * (`through`). An operation that can carry an idempotent charge sends, with one, up to
 * `idempotentThrough`: a consume or a reservation every idempotency argument, the undo that forgets an
 * id the id alone. Whether a call carries one is a property of its values (`idem` given), not another
 * operation: the scripts run the same operation with `IDEMPOTENT` true (see prelude.lua).
 */
export const OPERATIONS: Readonly<Record<Operation, OperationWire>> = Object.freeze({
  c: { through: 'now', idempotentThrough: 'idemReplays' },
  v: { through: 'maxDelay', idempotentThrough: 'idemReplays' },
  p: { through: 'now' },
  u: { through: 'delay', idempotentThrough: 'idem' },
  s: { through: 'maxDebt' },
  a: { through: 'now' },
  r: { through: 'now' },
});

/**
 * A call on the wire: its operation, followed by `+` when it carries an idempotent charge. It names the
 * call's script (one per call, with its `OP` and `IDEMPOTENT` declared) and heads the call's arguments
 * in a batch or a group script, whose loop reads its width, keys, operation and idempotency from
 * {@link callTables}.
 */
export type Call = Operation | `${IdempotentOperation}+`;

/** Every call, derived from {@link OPERATIONS}. */
export const CALLS: readonly Call[] = Object.freeze(
  (Object.keys(OPERATIONS) as Operation[]).flatMap((op): Call[] =>
    OPERATIONS[op].idempotentThrough === undefined ? [op] : [op, `${op as IdempotentOperation}+`],
  ),
);

/** The call of `op` with `values` (in the order of {@link ARGUMENTS}): idempotent when they hold an `idem`. */
export function callOf(op: Operation, values: readonly (string | undefined)[]): Call {
  if (values[IDEM_AT] === undefined) return op;
  if (OPERATIONS[op].idempotentThrough === undefined)
    throw new UnsupportedError(`RedisStore: the operation '${op}' takes no idempotent charge.`);
  return `${op as IdempotentOperation}+`;
}

/** The operation of a call. */
export function operationOf(call: Call): Operation {
  return call[0] as Operation;
}

/** True for a call that carries an idempotent charge. */
export function isIdempotent(call: Call): boolean {
  return call.length > 1;
}

/** How many of {@link ARGUMENTS} each call sends: all of them up to the last it reads (derived from {@link OPERATIONS} once). */
const WIDTHS = Object.freeze(
  Object.fromEntries(
    CALLS.map((call) => {
      const wire = OPERATIONS[operationOf(call)];
      return [call, ARGUMENTS.indexOf(isIdempotent(call) ? wire.idempotentThrough! : wire.through) + 1];
    }),
  ) as Record<Call, number>,
);

/** How many of {@link ARGUMENTS} a call sends: all of them up to the last it reads. */
export function widthOf(call: Call): number {
  return WIDTHS[call];
}

/** The Redis keys a call sends for a script of `numberOfKeys` keys: one more for an idempotent call on a state with keys of its own (its remembered ids, `IDEM_KEY`). */
export function keysOf(numberOfKeys: number, compact: boolean, call: Call): number {
  return !compact && isIdempotent(call) ? numberOfKeys + 1 : numberOfKeys;
}

/** The Lua local that holds the position of each argument, as the store declares it before every script. */
const POSITION_NAMES: Readonly<Record<Argument, string>> = {
  ...{ own: 'ARG_OWN', now: 'ARG_NOW', maxDelay: 'ARG_MAX_DELAY', chargedAt: 'ARG_CHARGED_AT', delay: 'ARG_DELAY' },
  ...{
    actual: 'ARG_ACTUAL',
    maxDebt: 'ARG_MAX_DEBT',
    idem: 'ARG_IDEM',
    fingerprint: 'ARG_FINGERPRINT',
    idemTtl: 'ARG_IDEM_TTL',
    idemMax: 'ARG_IDEM_MAX',
    idemReplays: 'ARG_IDEM_REPLAYS',
  },
};

/** The `ARGV` index of the first of {@link ARGUMENTS}: after the field in the compact layout. */
export function firstArgument(compact: boolean): number {
  return compact ? 2 : 1;
}

/** `local ARG_OWN, ARG_NOW, … = 2, 3, …`: the position of every argument (see prelude.lua), the same for every operation. */
export function argumentPositions(compact: boolean): string {
  const first = firstArgument(compact);
  return `local ${ARGUMENTS.map((a) => POSITION_NAMES[a]).join(', ')} = ${ARGUMENTS.map((_, i) => first + i).join(', ')}\n`;
}

/** The `ARGV` index where a configuration sent by argument starts, after everything `call` sends. */
export function configurationStart(compact: boolean, call: Call): number {
  return firstArgument(compact) + widthOf(call);
}

/**
 * The tables a batch or group script reads per call, by the call that heads its arguments (Lua text):
 * `WIDTH`, each call's width ({@link widthOf}); `IDEMPOTENT_OP`, the operation of each call with an
 * idempotent charge (absent for the others, whose call is their operation); of `calls` (every call,
 * unless given). Two small tables, built once per script call: a decision reads one entry of each.
 */
export function callTables(calls: readonly Call[] = CALLS): string {
  const entry = (call: Call, value: string) => (call.length === 1 ? `${call} = ${value}` : `['${call}'] = ${value}`);
  return (
    `local WIDTH = { ${calls.map((call) => entry(call, String(widthOf(call)))).join(', ')} }\n` +
    `local IDEMPOTENT_OP = { ${calls
      .filter(isIdempotent)
      .map((call) => entry(call, `'${operationOf(call)}'`))
      .join(', ')} }\n`
  );
}

/**
 * Appends `call`'s arguments to `args` (which holds the keys, and the field): `values` in the order of
 * {@link ARGUMENTS}, `undefined` for an absent one, up to the call's width. An absent argument is sent
 * as `''`; with `trim` (an inline call, whose configuration is in the script) the absent ones at the
 * end are left out, which the scripts read as absent too.
 */
export function appendArguments(
  args: string[],
  call: Call,
  values: readonly (string | undefined)[],
  trim: boolean,
): void {
  const width = widthOf(call);
  let end = args.length;
  for (let i = 0; i < width; i++) {
    const value = values[i];
    args.push(value ?? '');
    if (value !== undefined) end = args.length;
  }
  if (trim) args.length = end;
}

/** A charge's operation (see `Store.charge`): a consume ('c'), or with `maxDelayMs` a reservation ('v'). */
export function chargeOperation(charge: Charge): 'c' | 'v' {
  return charge.maxDelayMs === undefined ? 'c' : 'v';
}

/**
 * A charge's values, in the order of {@link ARGUMENTS}: its cost and `now`, then a reservation's
 * `maxDelay` and an idempotent charge's arguments ({@link idempotentValues}, which checks its digests):
 * with them, its call is the idempotent one ({@link callOf}).
 */
export function chargeValues(charge: Charge, now: number | undefined): (string | undefined)[] {
  const { cost, maxDelayMs, idempotency } = charge;
  if (maxDelayMs === undefined && idempotency === undefined) return [costOf(cost), timeOf(now)];
  return [costOf(cost), timeOf(now), timeOf(maxDelayMs), ...idempotentValues(idempotency)];
}

/** A give-back's values (an undo, 'u'), in the order of {@link ARGUMENTS}: its cost and `now`, the time and delay of its charge, and the id it forgets. */
export function giveBackValues(back: GiveBack, now: number | undefined): (string | undefined)[] {
  return [
    costOf(back.cost),
    timeOf(now),
    undefined,
    timeOf(back.chargedAt),
    timeOf(back.delayMs),
    undefined,
    undefined,
    back.idempotencyId,
  ];
}

/** An idempotent charge's arguments after a reservation's (see {@link ARGUMENTS}): none without one; its digests checked first. */
export function idempotentValues(charge: IdempotentCharge | undefined): (string | undefined)[] {
  if (
    charge !== undefined &&
    (charge.id.length !== IDEMPOTENCY_ID_LENGTH || charge.fingerprint.length !== IDEMPOTENCY_FINGERPRINT_LENGTH)
  ) {
    throw new UnsupportedError(
      `RedisStore: an idempotent charge's id and fingerprint are digests of ${IDEMPOTENCY_ID_LENGTH} and ${IDEMPOTENCY_FINGERPRINT_LENGTH} characters (see IdempotentCharge).`,
    );
  }
  return charge === undefined
    ? []
    : [
        undefined,
        undefined,
        undefined,
        undefined,
        charge.id,
        charge.fingerprint,
        String(charge.ttlMs),
        String(charge.maxIds),
        String(charge.maxReplays),
      ];
}

/** A cost as an argument: absent when 1 (the scripts read an absent cost as 1). */
export function costOf(cost: number): string | undefined {
  return cost === 1 ? undefined : String(cost);
}

/** A time (or a delay) as an argument: absent when undefined. */
export function timeOf(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : String(ms);
}
