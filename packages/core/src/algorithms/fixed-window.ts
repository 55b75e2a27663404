import type { NumericAlgorithm, NumericState } from '../algorithm.js';
import { ceilMs, EPSILON, floorUnits, makeDecision, makePolicy, type Decision } from '../decision.js';
import { parseDuration, type Duration } from '../duration.js';
import { checkOptions, integerAtLeast, optionalBoolean } from '../options.js';

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
  const o = checkOptions(options, ['limit', 'window', 'countDenied'], 'fixedWindow');
  const limit = integerAtLeast(o.limit, 'fixedWindow.limit');
  const windowMs = parseDuration(o.window, 'fixedWindow.window');
  const countDenied = optionalBoolean(o.countDenied, 'fixedWindow.countDenied', false);
  const policy = makePolicy(limit, windowMs);

  return {
    kind: 'fixed-window',
    stateKind: 'numeric',
    stateTag: 'fw',
    stateSize: 2,
    limit,
    maxCost: limit,
    policy,
    countDenied,
    params: { limit, windowMs, countDenied: countDenied ? 1 : 0 },
    options: { limit, window: windowMs, countDenied },

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
        allowed ? 0 : ceilMs(untilEnd),
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
