import type { Algorithm } from '@rl/core';

/**
 * What an algorithm really bounds, per key, with this configuration's numbers: its own
 * `describe()` (each algorithm of `@rl/core` states it in its own file).
 */
export function whatItBounds(algorithm: Algorithm): string {
  return algorithm.describe();
}

/**
 * The most this algorithm lets through for one key in any span `[s, s + spanMs)`, in units (for a
 * shaper, requests leaving the queue), when it has such a bound (the figure {@link whatItBounds}
 * states): its own `boundInSpan(spanMs)`.
 */
export function boundInSpan(algorithm: Algorithm, spanMs: number): number | undefined {
  return algorithm.boundInSpan(spanMs);
}
