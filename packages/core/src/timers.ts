import { InvalidOptionError } from './errors.js';

/** What {@link Timers.setTimeout} returns, handed back to {@link Timers.clearTimeout}. */
export type TimerHandle = unknown;

/**
 * The timer seam of rl: where the limiter's store timeouts and the HTTP layer's holds get their time
 * and their timers. Tests pass fake timers (`FakeTimers` from `@rl/core/simulation`) so that timeouts,
 * the store-down circuit and shaping holds are tested without waiting; applications leave the default,
 * {@link systemTimers}.
 */
export interface Timers {
  /** A monotonic time in milliseconds (only differences are used). */
  now(): number;
  /**
   * Calls `callback` once, `ms` milliseconds from now (at least 1). The limiter calls `unref()` on a
   * handle that has one (Node's), so that its store timeouts never keep a process alive; the HTTP
   * layer's holds keep theirs (a held request is work to finish).
   */
  setTimeout(callback: () => void, ms: number): TimerHandle;
  /** Cancels a callback that has not run yet; a handle that already ran does nothing. */
  clearTimeout(handle: TimerHandle): void;
}

/** Node's timers and `performance.now()`. */
export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** `handle`, unref'd when it can be (Node's): a timer of the limiter never keeps a process alive. */
export function unrefTimer(handle: TimerHandle): TimerHandle {
  if (typeof handle === 'object' && handle !== null && typeof (handle as { unref?: unknown }).unref === 'function')
    (handle as { unref(): void }).unref();
  return handle;
}

/** `value` as {@link Timers}, or an `InvalidOptionError` naming `field`. */
export function checkTimers(value: unknown, field: string): Timers {
  const t = value as Timers | null;
  if (
    t === null ||
    typeof t !== 'object' ||
    typeof t.now !== 'function' ||
    typeof t.setTimeout !== 'function' ||
    typeof t.clearTimeout !== 'function'
  ) {
    throw new InvalidOptionError(
      field,
      value,
      'timers with now(), setTimeout(callback, ms) and clearTimeout(handle), such as FakeTimers from @rl/core/simulation',
    );
  }
  return t;
}
