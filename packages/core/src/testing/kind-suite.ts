import type { Algorithm, AlgorithmKind } from '../algorithm.js';
import type { Bound } from './bounds.js';

/** Fields of a decision a step may check (compared against the last decision of the step). */
export interface ExpectedDecision {
  allowed?: boolean;
  remaining?: number;
  resetMs?: number;
  retryAfterMs?: number;
  delayMs?: number;
}

/** One step of a scenario: an operation at a time on the fake clock, repeated `times` times. */
export interface ScenarioStep {
  /** Clock time of the step, in ms. */
  at: number;
  /**
   * Default `'consume'`. `acquire`/`release` are for concurrency scenarios. `'undo'` gives back `cost`
   * of the decision named `of` (`limiter.undo(key, cost, decision)`: to the window it was charged in).
   * `'reserve'` reserves `cost` with `maxDelay` (`limiter.reserve`); `'cancel'` cancels the reservation
   * named `of` (its `cancel()`, which gives nothing back after its slot).
   */
  op?: 'consume' | 'peek' | 'reset' | 'acquire' | 'release' | 'undo' | 'reserve' | 'cancel';
  /** Default `'k'`. */
  key?: string;
  /** Default 1 for consume, 0 for peek. */
  cost?: number;
  /** A batch: the step repeated this many times at the same instant, one after the other. Default 1. */
  times?: number;
  /** Which of the scenario's algorithms to use (a configuration change over the same state). Default 0. */
  algorithm?: number;
  /** Name of the lease taken by `acquire` or given back by `release`. */
  lease?: string;
  /** Names the last decision of this step, for a later `'undo'` (`of`). */
  name?: string;
  /** For `'undo'` and `'cancel'`: the name of the earlier step whose decision is given back. */
  of?: string;
  /** For `'reserve'`: the longest wait accepted, in ms. */
  maxDelay?: number;
  expect?: {
    /** How many of the batch were admitted. */
    admitted?: number;
    /** The `delayMs` of each admitted request, in order. */
    delays?: number[];
    /** Fields of the last decision of the batch. */
    last?: ExpectedDecision;
  };
}

export interface Scenario {
  name: string;
  /** What the scenario shows, in one sentence. */
  description: string;
  /** Algorithms used by the steps; all share one key namespace (index 1+ model a changed configuration). */
  algorithms: Algorithm[];
  steps: ScenarioStep[];
}

/**
 * The tables scenarios are grouped in (exported as `seedScenarios`, `costScenarios`, …): the seed's
 * two batches, costs, retry-after and reset values, window edges, the clock going back, peek/reset and
 * countDenied, configuration changes, concurrency leases, give-backs at a later time, reservations
 * (run only on a store with `capabilities.reservations`).
 */
export type ScenarioGroup =
  'seed' | 'cost' | 'timing' | 'edge' | 'clock' | 'state' | 'configChange' | 'concurrency' | 'giveBack' | 'reservation';

/** What one algorithm admits in the seed's load test (seeds/001, scaled; see the conformance suite). */
export interface LoadTestRow {
  /** The test's name: the configuration and what it shows. */
  name: string;
  algorithm: Algorithm;
  /** Admitted in the warm-up, in each second of the surge, and the longest delay a shaper gave (ms). */
  expected: { warm: number; perSecond: number[]; maxDelay: number };
}

/** A configuration of `limit` units per `windowMs`, for the checks that hold for every rate algorithm. */
export type Sample = (limit: number, windowMs: number) => Algorithm;

/** The numbers a random configuration is made of: each kind takes those its options have. */
export interface DrawnOptions {
  /** A window's limit, a bucket's capacity, a number of permits. */
  readonly limit: number;
  /** A bucket's rate per `windowMs` (refilled or leaked), from tiny to huge. */
  readonly rate: number;
  /** A window, a bucket's interval, a lease (ms). */
  readonly windowMs: number;
  /** A window algorithm's `countDenied`. */
  readonly countDenied: boolean;
}

/** A configuration of one kind made of drawn numbers, for random sequences over every kind. */
export type Configuration = (drawn: DrawnOptions) => Algorithm;

/**
 * Everything the conformance suite checks for one algorithm kind. It runs on a store that lists `kind`
 * in `capabilities.algorithms`; a new algorithm adds one of these to its family's file in `kinds/`
 * (and to that file's list) and nothing else here.
 */
export interface KindSuite {
  readonly kind: AlgorithmKind;
  /** Its scenario tables, by group. */
  readonly scenarios: { readonly [G in ScenarioGroup]?: readonly Scenario[] };
  /**
   * Its lockout tables (`blockDuration`, through `withBlock`), run on a store that declares
   * `capabilities.blocks` (exported together as `lockoutScenarios`; not among `scenarios`).
   */
  readonly lockouts?: readonly Scenario[];
  /**
   * Its configurations made of drawn numbers, one per mode (the leaky bucket's meter and shaper), for
   * the random sequences that run every kind and need its options' whole ranges (fractional, tiny and
   * huge rates): a store's tests take every kind from here rather than naming each.
   */
  readonly configurations: readonly Configuration[];
  /**
   * Its configurations for the suite's checks common to rate algorithms (bad input, isolation,
   * combined limits, atomicity, the store's own clock, decision fields); none for concurrency, which
   * takes leases, not costs. A bucket of `limit` recovers fully over `windowMs`.
   */
  readonly samples: readonly Sample[];
  /** Its row of the seed's load test. */
  readonly loadTest?: LoadTestRow;
  /** The bounds it never breaks, as property tests. */
  readonly bounds?: readonly Bound[];
}

/** The seed's two batches (seeds/000, section 6): 100 requests at 0.990 s, then 100 at 1.010 s. */
export const seedBatches = (
  expectFirst: ScenarioStep['expect'],
  expectSecond: ScenarioStep['expect'],
): ScenarioStep[] => [
  { at: 990, times: 100, expect: expectFirst },
  { at: 1010, times: 100, expect: expectSecond },
];

/** `n` numbers from `from`, `step` apart: the delays of a shaper's queue. */
export const range = (n: number, step: number, from = 0): number[] =>
  Array.from({ length: n }, (_, i) => from + i * step);
