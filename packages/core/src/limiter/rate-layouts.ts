import type { Algorithm } from '../algorithm.js';
import { calendarWindow } from '../algorithms/calendar-window.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';

/**
 * One algorithm of each rate state layout of `@rl/core` (a store keeps a key's block, hence its ban,
 * per layout: the configuration does not matter), made once: a ban reaches the key in every layout a
 * per-call algorithm may use, in any instance, not only those this one has decided with.
 */
const RATE_LAYOUTS: readonly Algorithm[] = Object.freeze([
  fixedWindow({ limit: 1, window: 1000 }),
  calendarWindow({ limit: 1, period: 'day' }),
  slidingWindowLog({ limit: 1, window: 1000 }),
  slidingWindowCounter({ limit: 1, window: 1000 }),
  tokenBucket({ capacity: 1, refillRate: 1 }),
  leakyBucket({ capacity: 1, leakRate: 1 }),
]);

/** {@link RATE_LAYOUTS}. */
export function rateLayouts(): readonly Algorithm[] {
  return RATE_LAYOUTS;
}
