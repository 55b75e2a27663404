import type { Decision, Policy } from './decision.js';
import { CostExceedsCapacityError, InvalidCostError } from './errors.js';

/** Every algorithm kind of @rl/core (what a store that runs them all lists in its capabilities). */
export const ALGORITHM_KINDS = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'leaky-bucket',
  'concurrency',
] as const;

export type AlgorithmKind = (typeof ALGORITHM_KINDS)[number];

/** The numeric state of an algorithm: `stateSize` float64 numbers starting at an offset. */
export type NumericState = Float64Array | number[];

interface AlgorithmCommon {
  readonly kind: AlgorithmKind;
  /** Short name of the state layout, used by stores to keep different layouts apart (for example `tb`). */
  readonly stateTag: string;
  /** The quota shown in decisions: the limit or the capacity. */
  readonly limit: number;
  /** The largest cost one request may have. */
  readonly maxCost: number;
  readonly policy: Policy;
  /** Normalised parameters (times in ms, rates per ms), for stores that run the step elsewhere (Lua). */
  readonly params: Readonly<Record<string, number>>;
  /** Options as normalised, for display and for building derived limiters. */
  readonly options: Readonly<Record<string, unknown>>;
  /** When true, denied requests also consume quota (window algorithms only). */
  readonly countDenied: boolean;
  /** True when an admitted request may have to wait (`delayMs > 0`): a shaping leaky bucket. The HTTP layer then requires `wait`. */
  readonly mayDelay: boolean;
}

/**
 * An algorithm whose state is a fixed number of floats (fixed window, sliding counter, token bucket,
 * leaky bucket). Stores keep it compactly and run {@link NumericAlgorithm.step} atomically per key.
 */
export interface NumericAlgorithm extends AlgorithmCommon {
  readonly stateKind: 'numeric';
  readonly stateSize: number;
  /**
   * One decision at `now` (ms) for `cost` units. Reads the state at `s[o .. o + stateSize)`, or no
   * state when `fresh`. When `commit` is true it writes the new state back in place (always, allowed or
   * not: a denial may still advance time); when false it writes nothing (a peek).
   * The caller has validated `cost` (see {@link checkCost}); cost 0 asks for the state only.
   */
  step(s: NumericState, o: number, fresh: boolean, now: number, cost: number, commit: boolean): Decision;
  /** The time (ms, same clock) at which the state at `s[o]` is the same as no state: it has fully recovered. */
  expiresAt(s: NumericState, o: number): number;
  /** Gives back `cost` units admitted earlier (rollback of a combined limit); never gives back more than was taken. */
  undo(s: NumericState, o: number, now: number, cost: number): void;
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
   * One decision. `state` is owned by the caller and mutated in place when `commit` is true (pass
   * `undefined` for no state; the returned `state` is the one to keep).
   */
  step(state: LogState | undefined, now: number, cost: number, commit: boolean): { state: LogState; decision: Decision };
  expiresAt(state: LogState): number;
  undo(state: LogState, now: number, cost: number): void;
}

/** The state of a concurrency limit: the live leases and the time each expires. */
export type LeaseState = Map<string, number>;

/** A concurrency limit: at most `limit` leases at once per key; a lease expires after `leaseMs`. */
export interface ConcurrencyAlgorithm extends AlgorithmCommon {
  readonly stateKind: 'leases';
  readonly leaseMs: number;
  /** Tries to add lease `leaseId` at `now`; mutates `state` when admitted and `commit`. */
  acquire(state: LeaseState | undefined, now: number, leaseId: string, commit: boolean): { state: LeaseState; decision: Decision };
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
