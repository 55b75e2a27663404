import type { NumericAlgorithm, NumericState } from '../algorithm.js';
import { decisionFromExact, EPSILON, type Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import { checkOptions } from '../options.js';
import { parseBucketOptions } from './bucket-options.js';

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

/** `[tokens, lastRefillTime]`. */
const STATE_SIZE = 2;

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
 */
export function tokenBucket(options: TokenBucketOptions): NumericAlgorithm {
  const o = checkOptions(options, ['capacity', 'refillRate', 'interval'], 'tokenBucket');
  const { capacity, rate: refillRate, intervalMs, common } = parseBucketOptions(o, 'tokenBucket', 'refillRate');
  const policy = common.policy;
  /** Tokens per millisecond. */
  const rate = refillRate / intervalMs;

  return {
    kind: 'token-bucket',
    stateKind: 'numeric',
    stateTag: 'tb',
    stateSize: STATE_SIZE,
    ...common,
    mayDelay: false,
    params: { capacity, ratePerMs: rate },
    options: { capacity, refillRate, interval: intervalMs },
    script: {
      name: 'token-bucket',
      constants: [
        { name: 'CAPACITY', value: capacity },
        { name: 'RATE', value: rate },
      ],
      // The longest recovery: an empty bucket refilling.
      layout: { compact: true, stateSize: STATE_SIZE, horizonMs: capacity / rate },
      layoutRevision: 1,
    },

    step(s: NumericState, at: number, fresh: boolean, now: number, cost: number, commit: boolean): Decision {
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
      const allowed = tokens + EPSILON >= cost;
      if (allowed) tokens = Math.max(0, tokens - cost);
      if (commit) {
        s[at] = tokens;
        s[at + 1] = last;
      }
      // When the clock went back, `last` is ahead of `now`: waits are counted from `last`.
      const lag = last - now;
      // The retry is read only when denied: no division for an admitted request.
      const retryIn = allowed ? 0 : lag + (cost - tokens) / rate;
      return decisionFromExact(allowed, tokens, lag + (capacity - tokens) / rate, retryIn, 0, capacity, policy, now);
    },

    expiresAt(s: NumericState, at: number): number {
      return s[at + 1]! + (capacity - Math.min(capacity, s[at]!)) / rate;
    },

    undo(s: NumericState, at: number, _now: number, cost: number, chargedAt?: number): void {
      if (chargedAt === undefined) {
        s[at] = Math.min(capacity, s[at]! + cost);
        return;
      }
      // What the charge still weighs: at most its cost less what has refilled since (see above).
      const back = cost - Math.max(0, s[at + 1]! - chargedAt) * rate;
      if (back > 0) s[at] = Math.min(capacity, s[at]! + back);
    },
  };
}
