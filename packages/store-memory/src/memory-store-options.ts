import type { Clock, Duration, Timers } from '@rl/core/store';

/** Options of `MemoryStore`. */
export interface MemoryStoreOptions {
  /**
   * Most keys kept across all limits (default 1,000,000). Past it, the least recently used key is
   * evicted (CLOCK approximation of LRU): its next request starts fresh. Bounds memory under a flood
   * of distinct keys.
   */
  maxKeys?: number;
  /** How often one timer sweeps state that has fully recovered (default `'30s'`; `false`: never). The timer is unref'd. */
  sweepInterval?: Duration | false;
  /**
   * Where the sweep timer and the time it projects forward come from. Default: Node's timers; tests
   * pass `FakeTimers` from `@rl/core/testing` to run a sweep without waiting.
   */
  timers?: Timers;
  /** Clock used when the limiter passes no `now` (default: `systemClock`, wall-clock `Date.now()`). */
  clock?: Clock;
}
