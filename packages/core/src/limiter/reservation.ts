import type { Algorithm } from '../algorithm.js';
import { formatDuration, parseDuration, type Duration } from '../duration.js';
import type { Decision } from '../decision.js';
import { InvalidOptionError } from '../errors.js';
import type { MaybePromise } from '../store/interface.js';
import type { ChargeOptions } from './call-input.js';
import { withReceiptOf } from './receipt.js';

/** Options of `limiter.reserve(key, cost, options)`: those of any charge (`algorithm`, `idempotencyKey`, `fingerprint`), and `maxDelay`. */
export interface ReserveOptions extends ChargeOptions {
  /**
   * The longest wait the caller accepts (ms or a duration string; `0` accepts no wait), at most what
   * the algorithm can queue (`maxReserveMs`: a window; a leaky bucket's drain; a token bucket, 24 days).
   */
  maxDelay: Duration | 0;
}

/**
 * A reservation: the decision (`allowed`, `delayMs` the wait until its slot, `retryAfterMs` when
 * denied, …) and `cancel()`.
 */
export interface Reservation extends Decision {
  /**
   * Gives the reservation's units back because its holder will not act (its client left, another
   * limit denied the request). Before its slot (on the limiter's local clock, `delayMs` after the
   * decision arrived; a slot of now included) the store gives back what the reservation still weighs,
   * less what later reservations took behind it: each algorithm's doc comment says exactly what (as
   * Go's `Reservation.Cancel`); the later reservations keep their slots. After its slot, or for a
   * denied reservation or one decided by the failure policy, nothing. Resolves once the store has done
   * it (a failure is reported as a `'storeError'` event, never a rejection); a second call does nothing.
   */
  cancel(): Promise<void>;
}

/** Below a nanosecond: what a horizon computed in floating point may be off by. */
const HORIZON_NOISE_MS = 1e-6;

/** `maxDelay` in ms for `algorithm`, or the typed error naming `field`: a duration from 0 to the algorithm's `maxReserveMs`. */
export function parseMaxDelay(value: unknown, algorithm: Algorithm, field: string): number {
  const ms = value === 0 || value === '0ms' || value === '0s' ? 0 : parseDuration(value, field);
  if (algorithm.maxReserveMs <= 0)
    throw new InvalidOptionError(
      field,
      value,
      `no reservation: a ${algorithm.kind} limit cannot wait (it holds permits, not units)`,
    );
  // Float noise in a horizon computed from a rate (a leaky bucket's `capacity × interval / rate`) is forgiven.
  if (ms > algorithm.maxReserveMs + HORIZON_NOISE_MS) {
    throw new InvalidOptionError(
      field,
      value,
      `at most ${formatDuration(algorithm.maxReserveMs)} for this ${algorithm.kind}, the longest wait its state can queue (see the README's Waiting table)`,
    );
  }
  return ms;
}

/** The cancel of a reservation that took nothing (denied, or decided without the store). */
export function cancelNothing(): Promise<void> {
  return Promise.resolve();
}

/**
 * `decision` of a reservation with its `cancel()`: `giveBack` once, before the slot (`clock`, the
 * limiter's local clock, read now and at the call); nothing for a denial or a decision of the failure policy.
 */
export function withCancel(decision: Decision, clock: () => number, giveBack: () => MaybePromise<void>): Reservation {
  if (!decision.allowed || decision.reason !== undefined)
    return withReceiptOf(decision, { ...decision, cancel: cancelNothing });
  const slotAt = clock() + decision.delayMs;
  let cancelled = false;
  const cancel = async (): Promise<void> => {
    if (cancelled || clock() > slotAt) return;
    cancelled = true;
    await giveBack();
  };
  return withReceiptOf(decision, { ...decision, cancel });
}
