import type { NumericAlgorithm, NumericState, StepRequest, UndoRequest } from '../algorithm.js';
import { decisionFromExact, EPSILON, type Decision } from '../decision.js';
import { formatDuration, MAX_TIMER_MS, type Duration } from '../duration.js';
import { checkOptions } from '../options.js';
import { bucketPeerOptions } from '../peer-option-hints.js';
import { parseBucketOptions } from './bucket-options.js';
import { compactFields } from './define.js';
import { settleBy, undoDifference } from './settle.js';

export interface TokenBucketOptions {
  /** Most tokens the bucket holds, the largest burst (an integer from 1 to 999999999999999). The bucket starts full. */
  capacity: number;
  /**
   * Tokens added per `interval` (a finite number greater than 0, at most 999999999999999; fractions
   * allowed), fast enough that an empty bucket refills within 999999999999999 ms.
   */
  refillRate: number;
  /** The interval `refillRate` is counted over (from 1 ms to 999999999999999 ms). Default `'1s'`. */
  interval?: Duration;
}

/**
 * Token bucket: starts full with `capacity` tokens, refills lazily and continuously at
 * `refillRate / interval` (fractional tokens are kept), never above `capacity`. A request of cost `c`
 * is admitted when at least `c` tokens are there, and takes them; a denied request takes nothing.
 * In any span of T ms it admits at most `capacity + rate × T`. It does not bound any one-second window
 * to `refillRate`.
 *
 * Time going backwards adds no tokens and never moves the stored time back (elapsed time clamps to 0).
 * State: `[tokens, lastRefillTime]`. Expires when the bucket would be full again.
 * After a change of parameters, the stored balance is clamped to the new capacity.
 *
 * A give-back with the time of its charge (`undo(…, chargedAt)`) adds the cost less the tokens that
 * refilled since the charge (up to the stored refill time), never below 0 nor above the capacity. The
 * difference the charge made shrinks only while a bucket without it would have been full, and so by at
 * most the refill since the charge: adding more (the whole cost, as a give-back without `chargedAt`
 * does) could raise the balance above what it would be had the request not been charged (a bucket that
 * refilled to full after the charge and was then drained by others). A give-back right after its charge
 * returns the whole cost.
 *
 * A reservation (`step(…, maxDelay)`, Go's `ReserveN`) always takes its cost, and the balance may go
 * negative: its slot is when the balance would be back at 0, `delayMs = −tokens / rate` after the
 * charge, and it is admitted when that is at most `maxDelay` (any wait up to 24 days, longer than a
 * burst: the balance then goes as far as `−rate × maxDelay`, and the state lives until it has refilled
 * from there); a denied one takes nothing and says when it would fit
 * (`retryAfterMs = delay − maxDelay`). Later requests queue behind it (a consume is denied while the
 * balance is below its cost). Its cancel (`undo(…, chargedAt, delayMs)`, Go's `Reservation.Cancel`)
 * gives back the cost less the tokens reserved after it: `cost − rate × (tail − slot)`, where `tail`
 * is when the balance gets back to 0 (the last reservation's slot) and `slot = chargedAt + delayMs`,
 * never below 0; the reservations made after it keep their slots. With no `delayMs` (0) this is the
 * give-back above: before any reservation `tail` is the stored refill time.
 */
export function tokenBucket(options: TokenBucketOptions): NumericAlgorithm {
  const o = checkOptions(
    options,
    ['capacity', 'refillRate', 'interval'],
    'tokenBucket',
    bucketPeerOptions('refillRate'),
  );
  const { capacity, rate: refillRate, intervalMs, policy, common } = parseBucketOptions(o, 'tokenBucket', 'refillRate');
  /** Tokens per millisecond. */
  const rate = refillRate / intervalMs;

  function undo(s: NumericState, at: number, { cost, chargedAt, delayMs = 0 }: UndoRequest): void {
    if (chargedAt === undefined) {
      s[at] = Math.min(capacity, s[at]! + cost);
      return;
    }
    // What the charge still weighs: its cost less what has refilled since its slot, or (a balance
    // below 0) less what was reserved behind it (see above). The slot is known to the ms the decision
    // reported (rounded up): a tail less than 1 ms past it counts as none.
    const stored = s[at]!;
    const tail = stored < 0 ? s[at + 1]! - stored / rate : s[at + 1]!;
    const slot = chargedAt + delayMs;
    const behind = delayMs > 0 && tail <= slot ? 0 : delayMs > 0 ? tail - slot + 1 : tail - slot;
    const back = cost - Math.max(0, behind) * rate;
    if (back > 0) s[at] = Math.min(capacity, stored + back);
  }

  function step(s: NumericState, at: number, fresh: boolean, { now, cost, commit, maxDelay }: StepRequest): Decision {
    let tokens = capacity;
    let last = now;
    if (!fresh) {
      tokens = Math.min(capacity, s[at]!);
      last = s[at + 1]!;
      if (now > last) {
        tokens = Math.min(capacity, tokens + (now - last) * rate);
        last = now;
      }
    }
    // When the clock went back, `last` is ahead of `now`: waits are counted from `last`.
    const lag = last - now;
    let allowed: boolean;
    let delay = 0;
    let retryIn = 0;
    if (maxDelay === undefined) {
      allowed = tokens + EPSILON >= cost;
      if (allowed) tokens = Math.max(0, tokens - cost);
      // The retry is read only when denied: no division for an admitted request.
      else retryIn = lag + (cost - tokens) / rate;
    } else {
      // A reservation: the slot is when the balance, less the cost, is back at 0.
      const after = tokens - cost;
      const wait = after >= -EPSILON ? lag : lag - after / rate;
      allowed = wait <= maxDelay + EPSILON;
      if (allowed) {
        tokens = after >= -EPSILON ? Math.max(0, after) : after;
        delay = wait;
      } else {
        retryIn = wait - maxDelay;
      }
    }
    if (commit) {
      s[at] = tokens;
      s[at + 1] = last;
    }
    return decisionFromExact({
      allowed,
      remaining: tokens,
      resetInMs: lag + (capacity - tokens) / rate,
      retryInMs: retryIn,
      delayInMs: delay,
      limit: capacity,
      policy,
      at: now,
    });
  }

  return {
    ...compactFields({
      kind: 'token-bucket',
      stateTag: 'tb',
      // `[tokens, lastRefillTime]`.
      stateSize: 2,
      ...common,
      mayDelay: false,
      // Any wait a timer can hold: the balance goes as far below 0 as the wait needs. A full refill
      // longer than that stays the bound, computed without `rate` (`capacity / (refillRate / interval)`
      // is 2948.9999999999995 for 1 per 2949 ms: a maxDelay of the whole interval must be accepted).
      maxReserveMs: Math.max(MAX_TIMER_MS, (capacity * intervalMs) / refillRate),
      options: { capacity, refillRate, interval: intervalMs },
      constants: [
        { name: 'CAPACITY', value: capacity },
        { name: 'RATE', value: rate },
      ],
      // The longest recovery: an empty bucket refilling.
      horizonMs: capacity / rate,
    }),

    describe(): string {
      const interval = formatDuration(intervalMs);
      return `sustained rate + a burst: at most ${capacity} + ${refillRate}/${interval} × T in any span T; not "${refillRate} in any ${interval}"`;
    },

    boundInSpan: (spanMs: number) => Math.floor(capacity + rate * spanMs),
    leaseHoldMs: (_at: number, units: number) => units / rate,

    step,

    expiresAt(s: NumericState, at: number): number {
      return s[at + 1]! + (capacity - Math.min(capacity, s[at]!)) / rate;
    },

    undo,

    settle: settleBy(undoDifference(undo), (s, at, fresh, { now, cost, actual, maxDebt }) => {
      // Refilled to `now` by a step of cost 0 (which writes the state, taking nothing), then the rest
      // taken whatever the balance, down to −maxDebt.
      step(s, at, fresh, { now, cost: 0, commit: true, maxDelay: undefined });
      const tokens = s[at]!;
      if (tokens > -maxDebt) s[at] = Math.max(-maxDebt, tokens - (actual - cost));
    }),
  };
}
