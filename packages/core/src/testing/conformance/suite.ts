import fc from 'fast-check';
import { it } from 'vitest';
import type { Algorithm, AlgorithmKind } from '../../algorithm.js';
import type { Clock } from '../../clock.js';
import { createLimiter, type Limiter, type LimiterOptions } from '../../limiter/index.js';
import type { Store } from '../../store/interface.js';
import { arrivals, type Arrival } from '../bounds.js';
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

/** A limiter on the store under test with no store timeout, on a fresh prefix named after `label`, with `options` over these. */
export function limiterWith(suite: Suite, label: string, options: Partial<LimiterOptions>): Limiter {
  return createLimiter({ store: suite.store, prefix: freshPrefix(label), timeout: false, ...options });
}

/** Two limiters of `options` on the store under test and on one fresh prefix, as two processes share a key's state. */
export function sharingLimiters(suite: Suite, label: string, options: Partial<LimiterOptions>): [Limiter, Limiter] {
  const shared = { store: suite.store, prefix: freshPrefix(label), timeout: false as const, ...options };
  return [createLimiter(shared), createLimiter(shared)];
}

/**
 * Resolves once the store tells its reset listeners of `storageKey` (or of every key), as a deny
 * cache hears of a control; at once on a store that tells none (no `watchResets`). Called before the
 * control it waits for.
 */
export function resetHeard(store: Store, storageKey: string): Promise<void> {
  if (store.watchResets === undefined) return Promise.resolve();
  return new Promise<void>((resolve) =>
    store.watchResets!((key) => void ((key === undefined || key === storageKey) && resolve())),
  );
}

/**
 * Resolves once `store` hears resets (see `Store.watchResets`: a store whose resets are confirmed, such
 * as the Redis store, tells `hearing: false` until its subscription is live), so that a deny cache
 * remembers denials from then on; at once on a store that says nothing of it, or never hears them all.
 */
export async function resetsHeard(store: Store): Promise<void> {
  // A store that never hears every instance's resets (see `hearsEveryInstance`): nothing to wait for.
  if (store.watchResets === undefined || store.capabilities.hearsEveryInstance === false) return;
  let heard!: () => void;
  const live = new Promise<void>((resolve) => (heard = resolve));
  let deaf = false;
  const listener = (_key: string | undefined, hearing?: boolean): void => {
    if (hearing === false) deaf = true;
    else heard();
  };
  store.watchResets(listener);
  if (!deaf) return;
  await live;
  // Held until then: a store holds its listeners weakly.
  void listener;
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

/** One random case of a decision property: a sample made with drawn numbers, a fresh limiter on it, the requests to play. */
export interface SampledCase {
  readonly algorithm: Algorithm;
  /** The sample's limit, 1 to 6: no request costs more. */
  readonly limit: number;
  /** A limiter on the store under test, on a fresh prefix, reading `clock`. */
  readonly limiter: Limiter;
  /** The limiter's clock, in ms: 10 s at first; the property moves it by each arrival's gap. */
  readonly clock: { now: number };
  /** The requests: 1 to 60, 0 to 400 ms apart, costing 1 or 2. */
  readonly sequence: readonly Arrival[];
}

/**
 * Checks `property` on `suite.runs` random cases of the store's samples, each made with a limit of 1
 * to 6 and a window of 100 to 3000 ms, on a fresh prefix named after `label`.
 */
export function checkSampledCases(
  suite: Suite,
  label: string,
  property: (sampled: SampledCase) => Promise<void>,
): Promise<void> {
  const samples = samplesFor(suite.store);
  return fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: samples.length - 1 }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 100, max: 3000 }),
      arrivals(2),
      async (which, limit, windowMs, sequence) => {
        fc.pre(sequence.every((s) => s.cost <= limit));
        const clock = { now: 10_000 };
        const algorithm = samples[which]!.make(limit, windowMs);
        const limiter = limiterOn(suite.store, algorithm, freshPrefix(label), () => clock.now);
        await property({ algorithm, limit, limiter, clock, sequence });
      },
    ),
    { numRuns: suite.runs },
  );
}
