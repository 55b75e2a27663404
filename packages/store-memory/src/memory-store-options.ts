import {
  checkOptions,
  checkTimers,
  InvalidOptionError,
  parseTimerDuration,
  systemClock,
  systemTimers,
  type Clock,
  type Duration,
  type Timers,
} from '@rl/core/store';

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
   * pass `FakeTimers` from `@rl/core/simulation` to run a sweep without waiting.
   */
  timers?: Timers;
  /** Clock used when the limiter passes no `now` (default: `systemClock`, wall-clock `Date.now()`). */
  clock?: Clock;
}

/** The options of `MemoryStore`, checked: each `InvalidOptionError` names the option to fix. */
export function parseMemoryStoreOptions(options: MemoryStoreOptions): {
  maxKeys: number;
  clock: Clock;
  timers: Timers;
  sweepIntervalMs: number;
} {
  // `undefined` means "not given"; anything else, `null` included, must be a valid value.
  const o = checkOptions(options, ['maxKeys', 'sweepInterval', 'clock', 'timers'], 'MemoryStore');
  const maxKeys = o.maxKeys === undefined ? 1_000_000 : o.maxKeys;
  if (typeof maxKeys !== 'number' || !Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new InvalidOptionError('MemoryStore.maxKeys', maxKeys, 'an integer of at least 1');
  }
  if (o.clock !== undefined && typeof o.clock !== 'function') {
    throw new InvalidOptionError('MemoryStore.clock', o.clock, 'a function returning milliseconds');
  }
  const timers = o.timers === undefined ? systemTimers : checkTimers(o.timers, 'MemoryStore.timers');
  const sweepIntervalMs =
    o.sweepInterval === false
      ? 0
      : o.sweepInterval === undefined
        ? 30_000
        : parseTimerDuration(o.sweepInterval, 'MemoryStore.sweepInterval');
  return { maxKeys, clock: (o.clock as Clock | undefined) ?? systemClock, timers, sweepIntervalMs };
}
