import { it } from 'vitest';
import type { Algorithm, AlgorithmKind } from '../../algorithm.js';
import type { Clock } from '../../clock.js';
import { createLimiter, type Limiter } from '../../limiter/index.js';
import type { Store } from '../../store/interface.js';
import { kindSuites } from '../scenarios.js';

/** What every part of the conformance suite gets: the store under test and the run's settings. */
export interface Suite {
  /** The store under test; set once the suite's `beforeAll` has run (inside tests, never while registering). */
  readonly store: Store;
  /** Runs per property test. */
  readonly runs: number;
}

let prefixCounter = 0;
/** A key namespace no other test (or earlier run against a shared server) uses. */
export function freshPrefix(label: string): string {
  prefixCounter++;
  return `conf-${process.pid}-${Date.now().toString(36)}-${prefixCounter}-${label}`;
}

/** A limiter on the store under test, with no store timeout; with no `clock` the store decides on its own clock. */
export function limiterOn(store: Store, algorithm: Algorithm, prefix: string, clock: Clock | undefined): Limiter {
  return createLimiter({ algorithm, store, clock, prefix, timeout: false });
}

/** Whether the store runs every one of these algorithms (each kind is in its `capabilities.algorithms`). */
export function runsAll(store: Store, algorithms: readonly (Algorithm | AlgorithmKind)[]): boolean {
  return algorithms.every((a) => store.capabilities.algorithms.includes(typeof a === 'string' ? a : a.kind));
}

/**
 * Registers a test that runs when `applies()` holds for the store under test, and is reported as
 * skipped otherwise: the tests of an algorithm kind run only on a store that declares it. (Tests are
 * registered before the store exists, so the check is made when the test runs.)
 */
export function gatedIt(name: string, applies: () => boolean, body: () => Promise<void>): void {
  it(name, async (context) => {
    if (!applies())
      context.skip(
        'the store does not declare what this test needs (an algorithm kind or a capability of its `capabilities`)',
      );
    await body();
  });
}

/** A rate algorithm's configuration for the checks every rate algorithm passes: a name and `limit` per `windowMs`. */
export interface RateSample {
  readonly kind: AlgorithmKind;
  /** The kind, and the mode where a kind has several (`leaky-bucket (shape)`). */
  readonly label: string;
  make(limit: number, windowMs: number): Algorithm;
}

/** `fixed-window`, `leaky-bucket (meter)`: what the suite names an algorithm by. */
export const labelOf = (algorithm: Algorithm): string =>
  `${algorithm.kind}${algorithm.options.mode ? ` (${String(algorithm.options.mode)})` : ''}`;

/** Every rate algorithm configuration of the kind suites, in their order. */
export const rateSamples: readonly RateSample[] = kindSuites.flatMap((suite) =>
  suite.samples.map((make) => ({ kind: suite.kind, label: labelOf(make(10, 1000)), make })),
);

/** The rate samples of the kinds the store runs. */
export const samplesFor = (store: Store): RateSample[] => rateSamples.filter((sample) => runsAll(store, [sample.kind]));
