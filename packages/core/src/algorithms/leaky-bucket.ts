import type { NumericAlgorithm, NumericState, SettleRequest, StepRequest, UndoRequest } from '../algorithm.js';
import { CLOCK_ROUNDING, decisionFromExact, EPSILON, type Decision } from '../decision.js';
import { formatDuration, MAX_TIMER_MS, type Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { checkOptions } from '../options.js';
import { bucketPeerOptions } from '../peer-option-hints.js';
import { parseBucketOptions } from './bucket-options.js';
import { compactFields } from './define.js';
import { settleBy } from './settle.js';

export interface LeakyBucketOptions {
  /** `'meter'`: the bucket holds at most `capacity` units; `'shape'`: the queue holds at most `capacity` requests. An integer from 1 to 999999999999999. */
  capacity: number;
  /**
   * Units leaked (meter) or requests sent (shape) per `interval`. A finite number greater than 0, at
   * most 999999999999999, fast enough that a full bucket drains within 999999999999999 ms.
   */
  leakRate: number;
  /** The interval `leakRate` is counted over (from 1 ms to 999999999999999 ms). Default `'1s'`. */
  interval?: Duration;
  /**
   * `'meter'` (default): admit or reject at once, GCRA; a burst of up to `capacity` passes at once.
   * `'shape'`: admit into a bounded virtual queue and return `delayMs`, the wait before the request may
   * proceed, so that admitted requests leave one every `interval / leakRate`; reject when the queue is full.
   */
  mode?: 'meter' | 'shape';
}

/**
 * Leaky bucket as GCRA. State: `[tat, reach]`: `tat` the time at which the bucket (or queue) is empty,
 * and `reach` the queue (ms) a reservation longer than the bucket admitted it under (0 otherwise).
 * Emission interval `T = interval / leakRate`. A request of cost `c` at `now` gets the slot
 * `start = max(tat, now)` and would move `tat` to `start + c·T`; it is admitted when
 * `start + c·T − now ≤ capacity·T`. Missed slots are never caught up: an idle queue restarts at `now`.
 *
 * Shaping convention (several requests at one instant): arrivals are queued before that instant's
 * departure, so a request departing exactly `now` still occupies its place in the queue. In the
 * two-batch scenario (100/s, queue 20; 100 requests at 0.990 s, 100 at 1.010 s) this admits 20 with
 * delays 0, 10, …, 190 ms, then 2 more with delays 180 and 190 ms. The bound is on the backlog (`tat −
 * now ≤ capacity·T`), in which the request being sent holds its slot until the slot ends: a batch
 * between two departures (1.011 s) also gets 2 places, where a queue counting only the requests not
 * yet started would give 3. So the longest wait is `(capacity − 1)·T`, whenever the request comes.
 *
 * A change of parameters clamps the backlog to the new capacity: `tat` is read as at most
 * `now + max(capacity·T, reach)` (a full bucket, never an over-full one, but for what reservations
 * queued). This clamp also applies when the clock goes back by more than the free room: the bucket
 * then reads as full (requests are denied), no unit is ever added, and in real time the leak rate
 * still holds. Otherwise time going backwards never moves `tat` back (`start = max(tat, now)`).
 *
 * A give-back with the time of its charge (`undo(…, chargedAt)`) moves `tat` back by the charge's
 * `cost·T` less the time that has passed since the charge, never before `now`: the difference a charge
 * makes shrinks only while a bucket without it would have been empty, so by at most the time passed.
 * Moving it back by the whole `cost·T` (a give-back without `chargedAt`) could leave the bucket emptier
 * than it would be had the request not been charged. A give-back right after its charge returns it whole.
 *
 * A reservation (`step(…, maxDelay)`) is the shaper's step, in both modes (one model): its slot is
 * `start`, `delayMs = start − now`, admitted when `start − now ≤ maxDelay` and the queue has room: a
 * queue of `max(capacity·T, maxDelay)`, so a wait longer than the bucket queues as many requests as
 * fit in it (`next − now ≤ maxDelay`; any wait up to 24 days), `reach` keeping that queue from the
 * clamp; a denied one takes nothing and says when it would fit. A shaper's consume is
 * that step bounded by the queue alone. A meter's consume still admits a burst at once (it does not
 * queue behind reservations: FIFO holds among reservations). A give-back names its slot
 * (`undo(…, chargedAt, delayMs)`: `slot = chargedAt + delayMs`, `chargedAt` alone for a consume) and
 * moves `tat` back by its `cost·T` less the time passed since its slot, never before `now`; a delayed
 * one (and any of a shaper's, whose slot is always reported) with slots reserved behind it
 * (`tat > slot + cost·T`) gives nothing back. So a cancel before its slot returns its slots when nothing
 * was reserved after it; otherwise they come back only as the later slots pass, which those reservations
 * keep (stricter than Go's `Reservation.Cancel`, which returns what they leave). One `tat` holds no hole:
 * the room would go to slots inside the kept ones, whose own give-backs, measured from their slots, would
 * then return more than they still weigh (the balance above that of a bucket without either charge).
 */
export function leakyBucket(options: LeakyBucketOptions): NumericAlgorithm {
  const o = checkOptions(
    options,
    ['capacity', 'leakRate', 'interval', 'mode'],
    'leakyBucket',
    bucketPeerOptions('leakRate'),
  );
  const { capacity, rate: leakRate, intervalMs, policy, common } = parseBucketOptions(o, 'leakyBucket', 'leakRate');
  const mode = o.mode === undefined ? 'meter' : o.mode;
  if (mode !== 'meter' && mode !== 'shape')
    throw new InvalidOptionError('leakyBucket.mode', o.mode, "'meter' or 'shape'");
  const shape = mode === 'shape';
  /** Milliseconds per unit. */
  const emission = intervalMs / leakRate;
  const horizon = capacity * emission;
  /**
   * What a comparison of a backlog of `queue` ms with the queue forgives at `now` (ms): `tat` is an
   * absolute time, and at a real clock's magnitude (1.7e12 ms) a double holds it to 2.4e-4 ms, so each
   * slot a burst adds to it is rounded, by up to half a unit in the last place: forgiving one unit per
   * slot the queue holds (and two more), at most a sixteenth of a slot, keeps a request that fits
   * exactly from being denied (`leakyBucket({ capacity: 1, leakRate: 6 })` denied every request at
   * real times, a burst of 1000 passed 999) and never admits one more than a sixteenth of a slot early.
   */
  const slackAt = (now: number, queue: number): number =>
    EPSILON + Math.min(Math.abs(now) * CLOCK_ROUNDING * (Math.max(0, queue) / emission + 2), emission / 16);

  /**
   * Gives back the slots `[slot + actual·T, slot + cost·T)` of a charge of `cost` at `slot = chargedAt +
   * delayMs` that keeps `actual` of them: `tat` moves back by them less the time that has drained into
   * them, never before `now`, and not at all while slots are reserved behind the charge (see above). An undo
   * with the time of its charge gives back all its slots (`actual` 0), a settle below its estimate their tail.
   */
  function giveBack(
    s: NumericState,
    at: number,
    { now, cost, actual, chargedAt, delayMs }: Pick<SettleRequest, 'now' | 'cost' | 'actual' | 'chargedAt' | 'delayMs'>,
  ): void {
    // The slot is known to the ms the decision reported (rounded up). A delayed charge knows its slot,
    // and so does every charge of a shaper (its `delayMs` is reported, 0 included); a meter's consume
    // starts at `tat`, which it does not report.
    const slot = chargedAt + delayMs;
    // Nothing while a later reservation keeps its slot behind the charge (see above): with nothing behind
    // it, `tat` is at most EPSILON past the charge's end as reported.
    if ((delayMs > 0 || shape) && s[at]! - (slot + cost * emission) > slackAt(now, s[at]! - now)) return;
    const back = (cost - actual) * emission - Math.max(0, now - slot - actual * emission);
    if (back > 0) s[at] = Math.max(now, s[at]! - back);
  }

  function undo(s: NumericState, at: number, { now, cost, chargedAt, delayMs = 0 }: UndoRequest): void {
    if (chargedAt === undefined) s[at] = Math.max(now, s[at]! - cost * emission);
    else giveBack(s, at, { now, cost, actual: 0, chargedAt, delayMs });
  }

  return {
    ...compactFields({
      kind: 'leaky-bucket',
      stateTag: 'lb',
      // `[tat, reach]`.
      stateSize: 2,
      ...common,
      mayDelay: shape,
      // Any wait a timer can hold: a reservation's queue is as long as its maxDelay.
      maxReserveMs: Math.max(MAX_TIMER_MS, horizon),
      options: { capacity, leakRate, interval: intervalMs, mode },
      constants: [
        { name: 'CAPACITY', value: capacity },
        { name: 'EMISSION', value: emission },
        { name: 'SHAPE', value: shape ? 1 : 0 },
      ],
      // The longest recovery: a full bucket (or queue) draining.
      horizonMs: horizon,
    }),

    describe: () =>
      shape
        ? `the pace: admitted requests leave one every ${formatMs(emission)} per unit they cost; at most ${capacity} queued`
        : `same bound as a token bucket (GCRA): at most ${capacity} + ${leakRate}/${formatDuration(intervalMs)} × T in any span T`,

    boundInSpan(spanMs: number): number {
      // Shaping: departures at least one emission interval apart, each reported up to 1 ms late (a
      // decision's delayMs is whole ms, rounded up), so a span of S holds at most ceil((S + 1) / T);
      // metering: a full burst, then the rate.
      return shape
        ? Math.ceil(((spanMs + 1) * leakRate) / intervalMs - 1e-9)
        : Math.floor(capacity + (leakRate / intervalMs) * spanMs);
    },

    // A shaper's units are slots in its queue: they cannot be spent later.
    leaseHoldMs: (_at: number, units: number) => (shape ? 0 : units * emission),

    step(s: NumericState, at: number, fresh: boolean, { now, cost, commit, maxDelay }: StepRequest): Decision {
      // Clamp the backlog to this configuration's horizon (a capacity that shrank), or to the queue reservations made.
      const reach = fresh ? 0 : s[at + 1]!;
      const tat = fresh ? now : Math.min(s[at]!, now + (reach > horizon ? reach : horizon));
      const start = tat > now ? tat : now;
      const next = start + cost * emission;
      // The wait before the slot, exact (a difference of two close doubles): not `next − now`, which
      // rounds `next` at the clock's magnitude first.
      const wait = start - now;
      // The queue: the bucket's, or a longer reservation's.
      const queue = maxDelay !== undefined && maxDelay > horizon ? maxDelay : horizon;
      const slack = slackAt(now, queue);
      const fits = wait + cost * emission <= queue + slack;
      const allowed = fits && (maxDelay === undefined || wait <= maxDelay + slack);
      const kept = allowed ? next : tat;
      if (commit) {
        s[at] = kept;
        s[at + 1] = kept - now > horizon + slack ? Math.max(reach, queue) : 0;
      }
      const backlog = Math.max(0, kept - now);
      // A reservation fits once the queue has room and its slot is at most `maxDelay` away.
      const retry = maxDelay === undefined ? next - horizon - now : Math.max(next - queue - now, wait - maxDelay);
      return decisionFromExact({
        allowed,
        remaining: (horizon - backlog) / emission,
        resetInMs: backlog,
        retryInMs: retry,
        delayInMs: allowed && (shape || maxDelay !== undefined) ? wait : 0,
        limit: capacity,
        policy,
        at: now,
      });
    },

    expiresAt(s: NumericState, at: number): number {
      return s[at]!;
    },

    undo,

    settle: settleBy(giveBack, (s, at, fresh, { now, cost, actual }) => {
      // The rest fills the bucket (or queue) from its current level, at most to full: a step clamps it to
      // a full bucket (see above), so a leaky bucket takes no debt.
      const reach = fresh ? 0 : s[at + 1]!;
      const tat = fresh ? now : Math.min(s[at]!, now + Math.max(horizon, reach));
      s[at] = Math.max(tat, Math.min(Math.max(tat, now) + (actual - cost) * emission, now + horizon));
      s[at + 1] = s[at]! - now > horizon + slackAt(now, horizon) ? reach : 0;
    }),
  };
}

/** `10ms`, `1s`; a fraction of a millisecond to 3 decimals (`3.333ms`). */
function formatMs(ms: number): string {
  return Number.isInteger(ms) ? formatDuration(ms) : `${Number(ms.toFixed(3))}ms`;
}
