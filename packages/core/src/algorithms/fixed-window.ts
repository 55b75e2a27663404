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
 *
 * A give-back with the time of its charge (`undo(…, chargedAt)`) lowers the count only while the
 * stored window is the window of `chargedAt`: once the window has rolled over, the new window keeps its
 * count. The balance is then never above what it would be without the charge.
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
      return decisionFromExact(allowed, limit - count, count > 0 ? untilEnd : 0, untilEnd, 0, limit, policy, now);
    },

    expiresAt(s: NumericState, at: number): number {
      return s[at]! + windowMs;
    },

    undo(s: NumericState, at: number, now: number, cost: number, chargedAt?: number): void {
      const stored = s[at]!;
      // With the time of the charge: only while the stored window is the one it was charged in. A
      // stored window after it has rolled over (or was kept by a clock that went back: the charge may
      // have counted in it, or not), so it keeps its count; stricter, never looser.
      const charged = chargedAt === undefined ? stored >= Math.floor(now / windowMs) * windowMs : stored === Math.floor(chargedAt / windowMs) * windowMs;
      if (charged) s[at + 1] = Math.max(0, s[at + 1]! - cost);
    },
  };
}
