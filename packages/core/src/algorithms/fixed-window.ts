import type { NumericAlgorithm, NumericState, Settlement } from '../algorithm.js';
import { decisionFromExact, EPSILON, type Decision } from '../decision.js';
import { formatDuration } from '../duration.js';
import { compactFields } from './define.js';
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

  function undo(s: NumericState, at: number, now: number, cost: number, chargedAt?: number, delayMs = 0): void {
    const stored = s[at]!;
    // With the time of the charge: only while the stored window is the one it was charged in (the
    // window of its slot, for a reservation). A stored window after it has rolled over (or was kept
    // by a clock that went back: the charge may have counted in it, or not), so it keeps its count;
    // stricter, never looser.
    const charged = chargedAt === undefined ? stored >= Math.floor(now / windowMs) * windowMs : stored === Math.floor((chargedAt + delayMs) / windowMs) * windowMs;
    if (charged) s[at + 1] = Math.max(0, s[at + 1]! - cost);
  }

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

    step(s: NumericState, at: number, fresh: boolean, now: number, cost: number, commit: boolean, maxDelay?: number): Decision {
      const current = Math.floor(now / windowMs) * windowMs;
      // The same window, a reserved later one, or a clock that went back into an earlier one: keep the
      // stored window; an older one (or no state) counts nothing in the current window.
      const kept = !fresh && s[at]! >= current;
      let start = kept ? s[at]! : current;
      let count = kept ? s[at + 1]! : 0;
      const room = count + cost <= limit + EPSILON;
      let allowed: boolean;
      let slot = Math.max(now, start);
      let retryAt = start + windowMs;
      if (maxDelay === undefined) {
        // A consume cannot wait for a later stored window.
        allowed = room && start <= current;
        if (!allowed && room) retryAt = start;
        if (allowed || countDenied) count += cost;
      } else {
        if (!room) {
          // The next window is empty.
          slot = start + windowMs;
        }
        allowed = slot - now <= maxDelay + EPSILON;
        if (allowed) {
          if (!room) {
            start = slot;
            count = 0;
          }
          count += cost;
        } else {
          retryAt = slot - maxDelay;
        }
      }
      if (commit) {
        s[at] = start;
        s[at + 1] = count;
      }
      const untilEnd = start + windowMs - now;
      const delay = allowed && maxDelay !== undefined ? slot - now : 0;
      return decisionFromExact(allowed, limit - count, count > 0 ? untilEnd : 0, retryAt - now, delay, limit, policy, now);
    },

    expiresAt(s: NumericState, at: number): number {
      return s[at]! + windowMs;
    },

    undo,

    settle(s: NumericState, at: number, fresh: boolean, now: number, { cost, actual, chargedAt, delayMs, maxDebt }: Settlement): void {
      if (actual < cost) {
        if (!fresh) undo(s, at, now, cost - actual, chargedAt, delayMs);
        return;
      }
      // The rest goes to the window the request was charged in (of its slot, for a reservation): the
      // stored one, or a new state when none is stored since that window began; nothing once it has ended.
      const charged = Math.floor((chargedAt + delayMs) / windowMs) * windowMs;
      const current = Math.floor(now / windowMs) * windowMs;
      const stale = fresh || s[at]! < current;
      const most = limit + maxDebt;
      if (!stale && s[at] === charged) {
        const count = s[at + 1]!;
        if (count < most) s[at + 1] = Math.min(most, count + actual - cost);
      } else if (stale && charged >= current) {
        s[at] = charged;
        s[at + 1] = Math.min(most, actual - cost);
      } else if (fresh) {
        s[at] = current;
        s[at + 1] = 0;
      }
    },
  };
}
