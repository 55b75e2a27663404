import type { NumericAlgorithm } from '../algorithm.js';
import { formatDuration } from '../duration.js';
import { compactFields } from './define.js';
import { alignedWindows, windowCounter } from './window-counter.js';
import { parseWindowOptions, type WindowOptions } from './window-options.js';

/** `limit` units per window; `countDenied` counts denied requests too. */
export type FixedWindowOptions = WindowOptions;

/**
 * Fixed window counter: at most `limit` units in each window `[k·window, (k+1)·window)`, windows
 * aligned to multiples of the window on the clock. A request at exactly the end of a window belongs to
 * the next one. Adjacent windows are independent, so up to 2·limit can pass around a boundary.
 *
 * State: `[windowStart, count]`. Expires at the end of its window.
 *
 * A give-back with the time of its charge (`undo(…, chargedAt)`) lowers the count only while the
 * stored window is the window of `chargedAt`: once the window has rolled over, the new window keeps its
 * count. The balance is then never above what it would be without the charge.
 *
 * A reservation (`step(…, maxDelay)`, `maxDelay` at most one window) gets a slot in the first window,
 * within `maxDelay`, that has room: now in the current window, else at the start of the next one
 * (`delayMs` the time to it). Its units are counted in that window, which becomes the stored one, so
 * a request of the current window afterwards queues behind it: a consume is denied while the stored
 * window starts after `now` (as after a clock that went back into an earlier window). A denied
 * reservation takes nothing (also with `countDenied`) and says when it would fit. Its cancel
 * (`undo(…, chargedAt, delayMs)`) lowers the count of the window of its slot, `chargedAt + delayMs`,
 * while that is the stored window: later reservations of the same window keep their slot (a new one
 * gets the same slot, never an earlier one); once that window has begun, a cancel is a give-back.
 */
export function fixedWindow(options: FixedWindowOptions): NumericAlgorithm {
  const { limit, windowMs, countDenied, policy, common } = parseWindowOptions(options, 'fixedWindow');
  return {
    // `[windowStart, count]`; the longest recovery: a state is the same as no state at the end of its window.
    ...compactFields({ kind: 'fixed-window', stateTag: 'fw', stateSize: 2, horizonMs: windowMs, ...common }),

    describe(): string {
      const w = formatDuration(windowMs);
      return `each aligned window [k·${w}, (k+1)·${w}) admits at most ${limit}; up to ${2 * limit} around a boundary`;
    },

    boundInSpan(spanMs: number): number {
      // A span [s, s + S) that starts inside a window meets up to ceil(S / w) + 1 aligned windows.
      return limit * (Math.ceil(spanMs / windowMs) + 1);
    },

    // To the end of the window the block was counted in: a unit of this window is never spent in the next.
    leaseHoldMs: (at: number) => Math.floor(at / windowMs) * windowMs + windowMs - at,

    ...windowCounter(limit, countDenied, alignedWindows(windowMs, policy)),
  };
}
