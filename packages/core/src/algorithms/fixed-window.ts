import type { NumericAlgorithm, NumericState } from '../algorithm.js';
import { decisionFromExact, EPSILON, type Decision } from '../decision.js';
import { parseWindowOptions, type WindowOptions } from './window-options.js';

/** `limit` units per window; `countDenied` counts denied requests too. */
export type FixedWindowOptions = WindowOptions;

/** `[windowStart, count]`. */
const STATE_SIZE = 2;

/**
 * Fixed window counter: at most `limit` units in each window `[k·window, (k+1)·window)`, windows
 * aligned to multiples of the window on the clock. A request at exactly the end of a window belongs to
 * the next one. Adjacent windows are independent, so up to 2·limit can pass around a boundary.
 *
 * State: `[windowStart, count]`. Expires at the end of its window.
 */
export function fixedWindow(options: FixedWindowOptions): NumericAlgorithm {
  const { limit, windowMs, countDenied, common, constants } = parseWindowOptions(options, 'fixedWindow');
  const policy = common.policy;

  return {
    kind: 'fixed-window',
    stateKind: 'numeric',
    stateTag: 'fw',
    stateSize: STATE_SIZE,
    ...common,
    // The longest recovery: a state is the same as no state at the end of its window.
    script: { name: 'fixed-window', constants, layout: { compact: true, stateSize: STATE_SIZE, horizonMs: windowMs }, layoutRevision: 1 },

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
      return decisionFromExact(allowed, limit - count, count > 0 ? untilEnd : 0, untilEnd, 0, limit, policy);
    },

    expiresAt(s: NumericState, at: number): number {
      return s[at]! + windowMs;
    },

    undo(s: NumericState, at: number, now: number, cost: number): void {
      if (s[at]! >= Math.floor(now / windowMs) * windowMs) s[at + 1] = Math.max(0, s[at + 1]! - cost);
    },
  };
}
