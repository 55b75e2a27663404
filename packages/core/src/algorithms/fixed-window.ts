import type { NumericAlgorithm, NumericState } from '../algorithm.js';
import { ceilMs, EPSILON, floorUnits, makeDecision, type Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import { parseWindowOptions } from './window-options.js';

export interface FixedWindowOptions {
  /** Units admitted per window (an integer of at least 1). */
  limit: number;
  /** Window length; windows are `[start, start + window)` with `start` a multiple of the window on the clock. */
  window: Duration;
  /** Count denied requests too (a count-all-attempts policy, for example against login brute force). Default false. */
  countDenied?: boolean;
}

/**
 * Fixed window counter: at most `limit` units in each window `[k·window, (k+1)·window)`. A request at
 * exactly the end of a window belongs to the next one. Adjacent windows are independent, so up to
 * 2·limit can pass around a boundary.
 *
 * State: `[windowStart, count]`. Expires at the end of its window.
 */
export function fixedWindow(options: FixedWindowOptions): NumericAlgorithm {
  const { limit, windowMs, countDenied, common } = parseWindowOptions(options, 'fixedWindow');
  const policy = common.policy;

  return {
    kind: 'fixed-window',
    stateKind: 'numeric',
    stateTag: 'fw',
    stateSize: 2,
    ...common,

    step(s: NumericState, at: number, fresh: boolean, now: number, cost: number, commit: boolean): Decision {
      let start = Math.floor(now / windowMs) * windowMs;
      let count = 0;
      if (!fresh) {
        const storedStart = s[at]!;
        // The same window, or a clock that went back into an earlier one: keep the stored window.
        if (storedStart >= start) {
          start = storedStart;
          count = s[at + 1]!;
        }
      }
      const allowed = count + cost <= limit + EPSILON;
      if (allowed || countDenied) count += cost;
      if (commit) {
        s[at] = start;
        s[at + 1] = count;
      }
      const untilEnd = start + windowMs - now;
      return makeDecision(
        allowed,
        limit,
        floorUnits(limit - count),
        count > 0 ? ceilMs(untilEnd) : 0,
        allowed ? 0 : Math.max(1, ceilMs(untilEnd)),
        0,
        policy,
      );
    },

    expiresAt(s: NumericState, at: number): number {
      return s[at]! + windowMs;
    },

    undo(s: NumericState, at: number, now: number, cost: number): void {
      if (s[at]! >= Math.floor(now / windowMs) * windowMs) s[at + 1] = Math.max(0, s[at + 1]! - cost);
    },
  };
}
