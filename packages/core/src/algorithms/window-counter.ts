import type { NumericAlgorithm, NumericState, StepRequest, UndoRequest } from '../algorithm.js';
import { decisionFromExact, EPSILON, type Decision, type Policy } from '../decision.js';
import { settleBy, undoDifference } from './settle.js';

/**
 * Where the windows of a counter are: contiguous, non-overlapping spans of the clock. Aligned windows
 * of one length (`fixedWindow`), or calendar periods in a time zone (`calendarWindow`).
 */
export interface WindowPeriods {
  /** The start (ms) of the window that holds `t`. */
  startOf(t: number): number;
  /** The end (ms) of the window that starts at `start` (a value of {@link WindowPeriods.startOf}): the next one's start. */
  endOf(start: number): number;
  /** The policy a decision in the window that starts at `start` reports (a value of {@link WindowPeriods.startOf}): its `w` is that window's length. */
  policyOf(start: number): Policy;
}

/** The windows `[k·windowMs, (k+1)·windowMs)`, aligned to multiples of the window on the clock. */
export function alignedWindows(windowMs: number, policy: Policy): WindowPeriods {
  return {
    startOf: (t) => Math.floor(t / windowMs) * windowMs,
    endOf: (start) => start + windowMs,
    policyOf: () => policy,
  };
}

/** The steps of a window counter: what `fixedWindow` documents, over the windows of `periods`. */
export type WindowCounterSteps = Pick<NumericAlgorithm, 'step' | 'expiresAt' | 'undo' | 'settle'>;

/**
 * The steps of a counter of at most `limit` units per window of `periods`, state `[windowStart,
 * count]` (see `fixedWindow` for the contract: reservations at most into the next window, give-backs
 * to the window of the charge, settles, a clock that goes back).
 */
export function windowCounter(limit: number, countDenied: boolean, periods: WindowPeriods): WindowCounterSteps {
  const { startOf, endOf } = periods;

  function undo(s: NumericState, at: number, { now, cost, chargedAt, delayMs = 0 }: UndoRequest): void {
    const stored = s[at]!;
    // With the time of the charge: only while the stored window is the one it was charged in (the
    // window of its slot, for a reservation). A stored window after it has rolled over (or was kept
    // by a clock that went back: the charge may have counted in it, or not), so it keeps its count;
    // stricter, never looser.
    const charged = chargedAt === undefined ? stored >= startOf(now) : stored === startOf(chargedAt + delayMs);
    if (charged) s[at + 1] = Math.max(0, s[at + 1]! - cost);
  }

  return {
    step(s: NumericState, at: number, fresh: boolean, { now, cost, commit, maxDelay }: StepRequest): Decision {
      const current = startOf(now);
      // The same window, a reserved later one, or a clock that went back into an earlier one: keep the
      // stored window; an older one (or no state) counts nothing in the current window.
      const kept = !fresh && s[at]! >= current;
      let start = kept ? s[at]! : current;
      let end = endOf(start);
      let count = kept ? s[at + 1]! : 0;
      const room = count + cost <= limit + EPSILON;
      let allowed: boolean;
      let slot = Math.max(now, start);
      let retryAt = end;
      if (maxDelay === undefined) {
        // A consume cannot wait for a later stored window.
        allowed = room && start <= current;
        // A denial that is counted (`countDenied`, a consume that writes) takes its room in the stored
        // window: the same request fits there only beside it, else in the window after.
        const counted = !allowed && countDenied && commit;
        if (!allowed && (counted ? count + 2 * cost <= limit + EPSILON : room)) retryAt = start;
        if (allowed || countDenied) count += cost;
      } else {
        if (!room) {
          // The next window is empty.
          slot = end;
        }
        // At most into the next window: a full window after the current one has no later slot (the
        // state holds one window), whatever `maxDelay` (a calendar's periods differ in length).
        allowed = slot - now <= maxDelay + EPSILON && (room || start <= current);
        if (allowed) {
          if (!room) {
            start = slot;
            end = endOf(start);
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
      const delay = allowed && maxDelay !== undefined ? slot - now : 0;
      return decisionFromExact({
        allowed,
        remaining: limit - count,
        resetInMs: count > 0 ? end - now : 0,
        retryInMs: retryAt - now,
        delayInMs: delay,
        limit,
        policy: periods.policyOf(current),
        at: now,
      });
    },

    expiresAt(s: NumericState, at: number): number {
      return endOf(s[at]!);
    },

    undo,

    settle: settleBy(undoDifference(undo), (s, at, fresh, { now, cost, actual, chargedAt, delayMs, maxDebt }) => {
      // The rest goes to the window the request was charged in (of its slot, for a reservation): the
      // stored one, or a new state when none is stored since that window began; nothing once it has ended.
      const charged = startOf(chargedAt + delayMs);
      const current = startOf(now);
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
    }),
  };
}
