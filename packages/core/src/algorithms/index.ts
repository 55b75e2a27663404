import type { Algorithm, AlgorithmKind } from '../algorithm.js';
import { calendarWindow } from './calendar-window.js';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';

/** A kind's factory name: `token-bucket` → `tokenBucket`. */
type FactoryName<K extends string> = K extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<FactoryName<Tail>>}`
  : K;

/**
 * The algorithm factories of `@rl/core` by name, one per kind of `ALGORITHM_KINDS` and in its order
 * (the type checks that each kind has its factory, named as the kind in camel case): the one list of
 * the algorithms. `rl simulate --limit` takes its names from here; code that would name every
 * algorithm reads this list, or the kind suites of `@rl/core/testing`, instead.
 */
export const ALGORITHM_FACTORIES = {
  fixedWindow,
  calendarWindow,
  slidingWindowLog,
  slidingWindowCounter,
  tokenBucket,
  leakyBucket,
  concurrency,
} as const satisfies { readonly [K in AlgorithmKind as FactoryName<K>]: (options: never) => Algorithm };
