/**
 * A limiter over a `TestStore`, on a clock the test moves: for @rl/core's own tests of what a limiter
 * does while its store fails or answers late. Not part of `@rl/core/testing` (index.ts does not
 * export it).
 */
import { createLimiter, type Limiter } from '../limiter/limiter.js';
import type { LimiterOptions } from '../limiter/options.js';
import { TestStore, type TestStoreOptions } from './test-store.js';

export interface TestStoreLimiterOptions {
  /** The limiter's options, but its store and clock. */
  limiter: Omit<LimiterOptions, 'store' | 'clock'>;
  /** The store's options; `answers` defaults to `'manual'` (each call waits until the test answers it). */
  store?: TestStoreOptions;
  /** The clock's first reading, in ms; default 0. */
  start?: number;
}

export interface TestStoreLimiter {
  store: TestStore;
  limiter: Limiter;
  /** The limiter's clock: `now`, in ms, which the test sets. */
  clock: { now: number };
}

/** A limiter over a new `TestStore`, its clock reading `clock.now`. */
export function testStoreLimiter(options: TestStoreLimiterOptions): TestStoreLimiter {
  const store = new TestStore({ answers: 'manual', ...options.store });
  const clock = { now: options.start ?? 0 };
  const limiter = createLimiter({ ...options.limiter, store, clock: () => clock.now });
  return { store, limiter, clock };
}
