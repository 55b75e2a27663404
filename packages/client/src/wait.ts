import type { Timers } from '@rl/core';

/**
 * Resolves after `ms` on `timers` (at once for 0 or less, with no timer); rejects with the signal's
 * reason as soon as `signal` aborts (the timer cleared).
 */
export function wait(timers: Timers, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      timers.clearTimeout(handle);
      reject(signal.reason);
    };
    const handle = timers.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
