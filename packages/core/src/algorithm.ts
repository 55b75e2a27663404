import type { Decision, Policy } from './decision.js';
import { CostExceedsCapacityError, InvalidCostError, InvalidOptionError } from './errors.js';

/**
 * Every algorithm kind of @rl/core (what a store that runs them all lists in its capabilities), in the
 * order of their factories, `ALGORITHM_FACTORIES` (algorithms/index.ts): the one list of the algorithms.
 */
export const ALGORITHM_KINDS = [
  'fixed-window',
  'calendar-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'leaky-bucket',
  'concurrency',
] as const;

export type AlgorithmKind = (typeof ALGORITHM_KINDS)[number];

/** The numeric state of an algorithm: `stateSize` float64 numbers starting at an offset. */
export type NumericState = Float64Array | number[];

/**
 * A number of a configuration, as the algorithm's Lua twin reads it: the store declares
 * `local <name> = <value>` before the script (see packages/store-redis/src/lua/prelude.lua).
 */
export interface ScriptConstant {
  /** The Lua name, upper case (`CAPACITY`). */
  readonly name: string;
  /** A finite number; booleans are 1 or 0. */
  readonly value: number;
}

/**
 * The compact layout: each key's state is one value of `stateSize` float64 numbers, and the states of
 * many keys share one container (in Redis, the fields of a bucket hash, which expires as a whole).
 */
export interface CompactLayout {
  readonly compact: true;
  /** Float64 numbers in one state: the algorithm's `stateSize`. */
  readonly stateSize: number;
  /**
   * The longest time (ms) any state of this configuration can need to become the same as no state
   * (a window, two for the sliding counter, the time a bucket takes to refill or drain): a store keeps
   * a shared container alive at least this long after a write.
   */
  readonly horizonMs: number;
}

/** A state kept under keys of its own (a log, a set of leases), each with its own expiry. */
export interface OwnKeysLayout {
  readonly compact: false;
  /**
   * The keys of one state, in the order the twin reads them (its `KEYS`), each as the suffix it adds
   * to the state's key name: `''` for the state itself, for example `':sum'` for a metadata key.
   */
  readonly keys: readonly string[];
}

/**
 * What a store that runs the step elsewhere needs to know: the Redis store runs the algorithm's Lua
 * twin, `packages/store-redis/src/lua/<name>.lua`, with these constants before it. A store derives
 * everything it knows of an algorithm from this and from the fields of {@link AlgorithmCommon}; it
 * never names an algorithm kind.
 */
export interface ScriptDescriptor {
  /** The twin's name: its file is `<name>.lua`. */
  readonly name: string;
  /** The configuration the twin reads, in the order the store declares it. */
  readonly constants: readonly ScriptConstant[];
  readonly layout: CompactLayout | OwnKeysLayout;
  /**
   * 1 for the first layout of the state; raised when a version changes how the state is kept, so
   * that a store names the keys of each revision apart (a revision above 1 is appended to the state
   * tag, `:swl2`) and processes of two versions never read each other's state.
   */
  readonly layoutRevision: number;
  /**
   * Constants that change with time (a calendar window's period boundaries): the twin reads them as
   * it reads the others, but a store sends them with each call, computed at the call's time, so that
   * neither a store's tables nor Redis's script cache grow as time passes.
   */
  readonly timed?: TimedConstants;
  /** The twin reads the key's override (`Store.setOverride`) and decides with its numbers in place of `constants` (see `withOverrides`). */
  readonly overrides?: boolean;
}

/** The constants of a configuration that change with time (see {@link ScriptDescriptor.timed}). */
export interface TimedConstants {
  /** Their Lua names, upper case, as {@link ScriptConstant.name}. */
  readonly names: readonly string[];
  /** Their values (`String(value)`, in the order of `names`) for a call at `now` (ms, the caller's clock); the same array while they do not change. */
  values(now: number): readonly string[];
}

/** What every algorithm has, whatever its state. */
export interface AlgorithmCommon {
  readonly kind: AlgorithmKind;
  /** Short name of the state layout, used by stores to keep different layouts apart (for example `tb`). */
  readonly stateTag: string;
  /** The quota shown in decisions: the limit or the capacity. */
  readonly limit: number;
  /** The largest cost one request may have. */
  readonly maxCost: number;
  readonly policy: Policy;
  /** Options as normalised (times in ms), for display and for building derived limiters; stores read {@link AlgorithmCommon.script}. */
  readonly options: Readonly<Record<string, unknown>>;
  /** When true, denied requests also consume quota (window algorithms only). */
  readonly countDenied: boolean;
  /** True when an admitted request may have to wait (`delayMs > 0`): a shaping leaky bucket. The HTTP layer then requires `wait`. */
  readonly mayDelay: boolean;
  /**
   * The longest `maxDelay` (ms) a reservation may ask for (see {@link NumericAlgorithm.step}): as far as its state can represent a
   * queue. A token bucket: any wait up to `MAX_TIMER_MS` (24 days: its balance goes as far below 0 as the wait needs), or its full
   * refill when longer. A leaky bucket: the same (its queue as long as the wait). A window: one window. 0: none (concurrency).
   */
  readonly maxReserveMs: number;
  /**
   * The lockout after a denial, in ms (0: none, the default of every algorithm): once a consume of a
   * key is denied, every request of that key is denied until `blockMs` after that denial, and charges
   * nothing (see {@link withBlock}, which makes the copy of an algorithm that says it; stores that run
   * it declare `capabilities.blocks`).
   */
  readonly blockMs: number;
  /** Whether a store checks the key's block (a lockout's or a ban's, `Store.ban`) before the step: with a lockout, or through `withBans`. */
  readonly checksBlocks: boolean;
  /** Whether a store decides with the key's live override (`Store.setOverride`), read in the same step: through `withOverrides`. */
  readonly checksOverrides?: boolean;
  /** What a store that runs the step elsewhere (Redis, with a Lua twin) needs to know. */
  readonly script: ScriptDescriptor;
  /** The policy of a decision at `at` (ms) when it changes with time (a calendar window's `w`); absent: {@link AlgorithmCommon.policy}. */
  policyAt?(at: number): Policy;
  /**
   * What this configuration really bounds, per key (every key has its own state), in the words of the
   * README's "Choosing an algorithm" table and with its numbers: what `rl simulate` prints for it.
   */
  describe(): string;
  /**
   * The most this configuration admits for one key in any span `[s, s + spanMs)`, in units (for a
   * shaper, requests leaving its queue): the figure {@link AlgorithmCommon.describe} states. Undefined
   * when it states no such figure (the sliding counter, an estimate; a concurrency limit).
   */
  boundInSpan(spanMs: number): number | undefined;
  /**
   * How long (ms) `units` taken at once by a consume decided at `at` (the store's time) may be spent
   * locally afterwards, by a quota lease (see `LeaseOptions`), so that what the holders spend keeps
   * this configuration's bound: a fixed window until its window ends (exactly its limit per window);
   * a bucket the time its rate takes to bring `units` back (any span T then admits at most one block
   * more than {@link boundInSpan}); a sliding window one window (at most one block per holder more
   * than the limit in any window). 0: this algorithm takes no leases (a shaper, a concurrency limit).
   */
  leaseHoldMs(at: number, units: number): number;
}

/**
 * An algorithm whose state is a fixed number of floats (fixed window, sliding counter, token bucket,
 * leaky bucket). Stores keep it compactly and run {@link NumericAlgorithm.step} atomically per key.
 */
export interface NumericAlgorithm extends AlgorithmCommon {
  readonly stateKind: 'numeric';
  readonly stateSize: number;
  /**
   * One decision at `request.now` (ms) for `request.cost` units. Reads the state at
   * `s[at .. at + stateSize)`, or no state when `fresh`. When `request.commit` is true it writes the new
   * state back in place (always, allowed or not: a denial may still advance time); when false it writes
   * nothing (a peek). The caller has validated `cost` (see {@link checkCost}); cost 0 asks for the state
   * only. The decision is rounded by `decisionFromExact` (decision.ts).
   *
   * With `request.maxDelay` (ms, from 0 to {@link AlgorithmCommon.maxReserveMs}) the step is a
   * reservation: the request is admitted when its units can be taken for a slot at most `maxDelay` ahead
   * (`delayMs`, the wait until the slot), and they are taken now, so that later requests queue behind
   * it; otherwise it is denied, nothing is taken, and `retryAfterMs` says when such a reservation would
   * fit. A consume (`maxDelay` undefined) is a request that cannot wait: it is denied while its slot
   * would be later than `now` (behind a reservation), except by a shaping leaky bucket, whose consume is
   * a reservation bounded by its queue alone. Each algorithm's doc comment says where its slots are.
   */
  step(s: NumericState, at: number, fresh: boolean, request: StepRequest): Decision;
  /** The time (ms, same clock) at which the state at `s[at]` is the same as no state: it has fully recovered. */
  expiresAt(s: NumericState, at: number): number;
  /**
   * Gives back `back.cost` units admitted earlier (a rollback of a combined limit, a response whose
   * outcome is not counted), at `back.now`. With `back.chargedAt`, the {@link Decision.at} of the consume
   * that charged them, it gives back only what that charge still weighs: to the window it was charged in
   * and never beyond that window's count; for a bucket, less what would have come back by itself since
   * then. So the balance is never raised above what it would be had the request not been charged (each
   * algorithm's doc comment says how). Without `chargedAt`: the rollback right after the charge, the
   * older contract (never more than was taken, but a late call may give to a newer window).
   *
   * `back.delayMs`, with `chargedAt`, is the charge's {@link Decision.delayMs}: the charge was a
   * reservation for the slot `chargedAt + delayMs`, and the give-back (a reservation's `cancel()`)
   * returns what the reservation still weighs, less what later reservations took behind it (the
   * algorithm's doc comment says exactly what).
   */
  undo(s: NumericState, at: number, back: UndoRequest): void;
  /**
   * Settles a charge at the request's real cost ({@link Settlement}), at `request.now`: a give-back of
   * `cost − actual` when the request cost less (as {@link NumericAlgorithm.undo} with the charge's time),
   * a charge of `actual − cost` when it cost more, taken whatever the balance (a settle is never
   * denied: the work is done) in the window the request was charged in (nothing once that window has
   * ended; a bucket, which has no windows, now), and never past `maxDebt` (a window's count at most
   * `limit + maxDebt`, a token bucket's balance at least `−maxDebt`; a leaky bucket, whose one timestamp
   * cannot hold more than a full bucket, at most full). `fresh`: there is no state (the store made room
   * for one, which the settle writes whole); a store calls it so only when the request cost more.
   */
  settle(s: NumericState, at: number, fresh: boolean, request: SettleRequest): void;
}

/** A charge settled at the request's real cost (see {@link NumericAlgorithm.settle}). */
export interface Settlement {
  /** The units the consume charged (the estimate). */
  readonly cost: number;
  /** The units the request really cost: a finite number, 0 or more. */
  readonly actual: number;
  /** The consume's {@link Decision.at}. */
  readonly chargedAt: number;
  /** The consume's {@link Decision.delayMs} (a reservation's slot is `chargedAt + delayMs`); 0 for none. */
  readonly delayMs: number;
  /** How far a settle may take the state past its limit, in units (0 or more). */
  readonly maxDebt: number;
}

/**
 * What one step is asked (see {@link NumericAlgorithm.step}, {@link LogAlgorithm.step}): a record, so
 * that a later attribute of a step is a field here, never one more parameter. A store builds it once
 * per call, with every field present and in this order (`maxDelay: undefined` for a consume), so that
 * the steps see one object shape.
 */
export interface StepRequest {
  /** The time of the decision, in ms: its {@link Decision.at}. */
  readonly now: number;
  /** The units asked for (checked by the caller, see {@link checkCost}); 0 asks for the state only. */
  readonly cost: number;
  /** Write the new state (a charge); false: write nothing (a peek). */
  readonly commit: boolean;
  /**
   * A reservation: the longest wait accepted, in ms (0 to {@link AlgorithmCommon.maxReserveMs}; -1: no
   * slot at all, a reservation the step denies, as a store asks for one no slot could fit: see
   * `requestUnder`); undefined: a consume.
   */
  readonly maxDelay?: number;
}

/**
 * Units given back to a state (see {@link NumericAlgorithm.undo}): the store's `GiveBack` without its
 * key and algorithm, at `now`. A store builds it once per give-back, every field present, in this order.
 */
export interface UndoRequest {
  /** The time of the give-back, in ms (the store's clock when the limiter has none). */
  readonly now: number;
  /** The units given back (`cost > 0`). */
  readonly cost: number;
  /** The charge's {@link Decision.at}; undefined: the older rollback right after a charge. */
  readonly chargedAt?: number;
  /** With `chargedAt`, the charge's {@link Decision.delayMs}: a reservation's cancel. Undefined or 0: none. */
  readonly delayMs?: number;
}

/** A {@link Settlement} at `now` (ms), as a step is asked (see {@link NumericAlgorithm.settle}): `now` first, then the settlement's fields in their order. */
export interface SettleRequest extends Settlement {
  /** The time of the settle, in ms (the store's clock when the limiter has none). */
  readonly now: number;
}

/** The state of a sliding log: timestamps and costs of the recorded requests, oldest first. */
export interface LogState {
  times: number[];
  /**
   * Each record's cost, parallel to `times`; negative for a denial recorded by `countDenied` (its units
   * count the same). `null` while every record costs 1 (the common case: half the memory, one push).
   */
  costs: number[] | null;
  /** Index of the oldest live record (records before it are dropped lazily). */
  head: number;
  /** Sum of the live records' costs. */
  sum: number;
}

/** The sliding window log: its state grows with the number of recorded requests. */
export interface LogAlgorithm extends AlgorithmCommon {
  readonly stateKind: 'log';
  /**
   * One decision. `state` is owned by the caller and mutated in place when `request.commit` is true
   * (pass `undefined` for no state; the returned `state` is the one to keep). With `request.maxDelay`,
   * a reservation: see {@link NumericAlgorithm.step}.
   */
  step(state: LogState | undefined, request: StepRequest): { state: LogState; decision: Decision };
  expiresAt(state: LogState): number;
  /** Gives back `back.cost` units admitted earlier: see {@link NumericAlgorithm.undo}. */
  undo(state: LogState, back: UndoRequest): void;
  /**
   * Settles a charge at its real cost (see {@link NumericAlgorithm.settle}): the record the charge made
   * (found as {@link LogAlgorithm.undo} finds it) gets the actual cost, so it leaves the window when the
   * charge does; a cost above the estimate is taken only up to `limit + maxDebt` in all, an actual cost
   * of 0 removes the record. Nothing once the record has left the window (or is not kept).
   */
  settle(state: LogState, request: SettleRequest): void;
}

/** The state of a concurrency limit: the live leases and the time each expires. */
export type LeaseState = Map<string, number>;

/** A concurrency limit: at most `limit` leases at once per key; a lease expires after `leaseMs`. */
export interface ConcurrencyAlgorithm extends AlgorithmCommon {
  readonly stateKind: 'leases';
  readonly leaseMs: number;
  /** Tries to add lease `leaseId` at `now`; mutates `state` when admitted and `commit`. */
  acquire(
    state: LeaseState | undefined,
    now: number,
    leaseId: string,
    commit: boolean,
  ): { state: LeaseState; decision: Decision };
  /** Removes a lease; returns whether it was live. */
  release(state: LeaseState, leaseId: string): boolean;
  expiresAt(state: LeaseState): number;
}

export type Algorithm = NumericAlgorithm | LogAlgorithm | ConcurrencyAlgorithm;

/**
 * Throws unless `cost` is a finite number greater than 0 (or equal to 0 when `allowZero`, for peeks)
 * and no larger than the algorithm's `maxCost`. Runs before any state is touched.
 */
export function checkCost(algorithm: Algorithm, cost: unknown, allowZero = false): number {
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || (cost === 0 && !allowZero)) {
    throw new InvalidCostError(cost);
  }
  if (cost > algorithm.maxCost) throw new CostExceedsCapacityError(cost, algorithm.maxCost, algorithm.kind);
  return cost;
}

const STATE_KINDS = new Set(['numeric', 'log', 'leases']);

/** Whether `value` is an algorithm made by `tokenBucket()`, `fixedWindow()` and the others. */
export function isAlgorithm(value: unknown): value is Algorithm {
  return (
    value !== null &&
    typeof value === 'object' &&
    STATE_KINDS.has((value as Algorithm).stateKind) &&
    Boolean((value as Algorithm).policy)
  );
}

/** `value` as an {@link Algorithm}, or an `InvalidOptionError` naming `field`. */
export function checkAlgorithm(value: unknown, field: string): Algorithm {
  if (!isAlgorithm(value)) {
    throw new InvalidOptionError(
      field,
      value,
      "an algorithm such as tokenBucket({ capacity: 20, refillRate: 10 }) or fixedWindow({ limit: 100, window: '1m' })",
    );
  }
  return value;
}
