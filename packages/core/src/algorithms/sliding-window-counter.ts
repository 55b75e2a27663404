import type { NumericAlgorithm, NumericState, StepRequest, UndoRequest } from '../algorithm.js';
import { decisionFromExact, EPSILON, type Decision } from '../decision.js';
import { formatDuration } from '../duration.js';
import { compactFields } from './define.js';
import { settleBy, undoDifference } from './settle.js';
import { parseWindowOptions, type WindowOptions } from './window-options.js';

/** `limit` units in any window (estimated); `countDenied` counts denied requests too. */
export type SlidingWindowCounterOptions = WindowOptions;

/**
 * Sliding window counter, the approximate two-window estimate: with `elapsed` ms into the current
 * window (the two counted windows are aligned to multiples of the window on the clock), the usage is
 * estimated as `previous × (window − elapsed) / window + current`, and a request is admitted when
 * `estimate + cost ≤ limit`. It assumes the previous window's requests were
 * spread evenly: a burst at the end of the previous window is under-counted (it may admit more than
 * `limit` in a true rolling window), a burst at its start is over-counted.
 *
 * State: `[currentWindowStart, previousCount, currentCount]`. Expires two windows after its start.
 *
 * A give-back with the time of its charge (`undo(…, chargedAt)`) lowers the count of the window that
 * holds `chargedAt`, the current or the previous one, never below 0, and nothing once that window is
 * older than the previous one. (After a clock that went back, a charge counted in a later stored
 * window than its own is taken from the previous count, which weighs less: stricter, never looser.)
 *
 * A reservation (`step(…, maxDelay)`, `maxDelay` at most one window) gets the earliest time its cost
 * fits the estimate: now, later in the current window as the previous count fades, or in the next
 * window (where the current count becomes the previous one); its units are counted in the window of
 * that slot (which then becomes the stored one), so later requests need more room and queue behind it
 * (a consume is denied while the stored window starts after `now`). A denied reservation takes nothing
 * (also with `countDenied`) and says when it would fit. Its cancel (`undo(…, chargedAt, delayMs)`)
 * lowers the count of the window of its slot, `chargedAt + delayMs`, as a give-back does; later
 * reservations keep their slots, and a new one needs at least their room, so gets no earlier slot.
 */
export function slidingWindowCounter(options: SlidingWindowCounterOptions): NumericAlgorithm {
  const { limit, windowMs, countDenied, policy, common } = parseWindowOptions(options, 'slidingWindowCounter');

  function undo(s: NumericState, at: number, { now, cost, chargedAt, delayMs = 0 }: UndoRequest): void {
    const stored = s[at]!;
    if (chargedAt === undefined) {
      if (stored >= Math.floor(now / windowMs) * windowMs) s[at + 2] = Math.max(0, s[at + 2]! - cost);
      return;
    }
    // The window of the charge (of its slot, for a reservation): still the current one (its count is
    // the current count), the previous one (its count is the previous count), or gone.
    const charged = Math.floor((chargedAt + delayMs) / windowMs) * windowMs;
    const slot = stored === charged ? at + 2 : stored === charged + windowMs ? at + 1 : -1;
    if (slot !== -1) s[slot] = Math.max(0, s[slot]! - cost);
  }

  function step(s: NumericState, at: number, fresh: boolean, { now, cost, commit, maxDelay }: StepRequest): Decision {
    const currentWindow = Math.floor(now / windowMs) * windowMs;
    let start = currentWindow;
    let previous = 0;
    let current = 0;
    if (!fresh) {
      const storedStart = s[at]!;
      if (storedStart >= start) {
        // Same window, a reserved later one, or the clock went back: keep the stored windows.
        start = storedStart;
        previous = s[at + 1]!;
        current = s[at + 2]!;
      } else if (storedStart === start - windowMs) {
        previous = s[at + 2]!;
      }
    }
    // Time into the current window, clamped to [0, window) when the clock went back.
    const elapsed = Math.max(0, now - start);
    const left = windowMs - elapsed;
    const estimate = (previous * left) / windowMs + current;
    // A consume cannot wait for a later stored window.
    const fitsNow = estimate + cost <= limit + EPSILON && start <= currentWindow;
    const end = start + windowMs;
    // Earliest time at which estimate + cost <= limit, assuming nothing else is admitted (read when
    // the request does not fit now): in this window as the previous count fades, else in the next.
    let fitAt = now;
    let nextWindow = false;
    if (!fitsNow) {
      // A denial that is counted (`countDenied`, a consume that writes) takes its place: the same
      // request fits once the count with it has room (else a client retrying at the retry time is
      // denied again, and counted again, for ever).
      const held = countDenied && commit && maxDelay === undefined ? current + cost : current;
      const room = limit - cost - held;
      if (room >= -EPSILON && previous > 0) {
        fitAt = Math.max(start, end - (Math.max(0, room) * windowMs) / previous);
      } else if (room >= -EPSILON) {
        fitAt = start;
      } else {
        // In the next window the current count becomes the previous one.
        const nextRoom = limit - cost;
        fitAt = held > 0 ? Math.max(end, end + windowMs - (nextRoom * windowMs) / held) : end;
        nextWindow = true;
      }
    }
    let allowed: boolean;
    let delay = 0;
    let retryAt = fitAt;
    if (maxDelay === undefined) {
      allowed = fitsNow;
      if (allowed || countDenied) current += cost;
    } else {
      delay = Math.max(0, fitAt - now);
      allowed = delay <= maxDelay + EPSILON;
      if (allowed) {
        if (nextWindow) {
          start = end;
          previous = current;
          current = 0;
        }
        current += cost;
      } else {
        retryAt = fitAt - maxDelay;
        delay = 0;
      }
    }
    if (commit) {
      s[at] = start;
      s[at + 1] = previous;
      s[at + 2] = current;
    }
    const after = (previous * Math.max(0, windowMs - Math.max(0, now - start))) / windowMs + current;
    const stateEnd = start + windowMs;
    const resetAt = current > 0 ? stateEnd + windowMs : previous > 0 ? stateEnd : now;
    return decisionFromExact({
      allowed,
      remaining: limit - after,
      resetInMs: resetAt - now,
      retryInMs: allowed ? 0 : retryAt - now,
      delayInMs: delay,
      limit,
      policy,
      at: now,
    });
  }

  return {
    // `[currentWindowStart, previousCount, currentCount]`; the longest recovery: a current count stops
    // mattering two windows after its window starts.
    ...compactFields({
      kind: 'sliding-window-counter',
      stateTag: 'swc',
      stateSize: 3,
      horizonMs: 2 * windowMs,
      ...common,
    }),

    describe: () =>
      `an estimate of any rolling ${formatDuration(windowMs)}: previous window × remaining fraction + current ≤ ${limit}; under-counts a burst at the end of the previous window`,
    // An estimate: it bounds no span exactly.
    boundInSpan: () => undefined,
    leaseHoldMs: () => windowMs,

    step,

    expiresAt(s: NumericState, at: number): number {
      return s[at]! + 2 * windowMs;
    },

    undo,

    settle: settleBy(undoDifference(undo), (s, at, fresh, { now, cost, actual, chargedAt, delayMs, maxDebt }) => {
      // The stored windows moved to `now` by a step of cost 0 (which writes them, counting nothing), then
      // the rest added to the count of the window of the charge (of its slot): the current or the previous one; nothing once it is older.
      step(s, at, fresh, { now, cost: 0, commit: true, maxDelay: undefined });
      const start = s[at]!;
      let previous = s[at + 1]!;
      let current = s[at + 2]!;
      const charged = Math.floor((chargedAt + delayMs) / windowMs) * windowMs;
      const most = limit + maxDebt;
      if (charged === start && current < most) current = Math.min(most, current + actual - cost);
      else if (charged === start - windowMs && previous < most) previous = Math.min(most, previous + actual - cost);
      s[at + 1] = previous;
      s[at + 2] = current;
    }),
  };
}
