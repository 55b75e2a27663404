import { describe, expect } from 'vitest';
import { withBlock } from '../../algorithms/block.js';
import { concurrency } from '../../algorithms/concurrency.js';
import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import type { Algorithm } from '../../algorithm.js';
import { InvalidOptionError } from '../../errors.js';
import { createLimiter, type Limiter, type Reservation } from '../../limiter/index.js';
import type { Admission, Admit } from '../bounds.js';
import { kindSuites } from '../scenarios.js';
import { checkSampledCases, freshPrefix, gatedIt, limiterOn, runsAll, samplesFor, type Suite } from './suite.js';

/** Whether the store runs reservations and every one of these kinds. */
const reservesAll = (suite: Suite, kinds: Parameters<typeof runsAll>[1]): boolean =>
  suite.store.capabilities.reservations === true && runsAll(suite.store, kinds);

/**
 * Reservations (`limiter.reserve`) on a store that declares `capabilities.reservations`: each kind's
 * bounds hold with the reserved units counted at their slots, cancels included; FIFO among
 * reservations; bad `maxDelay` values are typed errors that touch nothing; a blocked key cannot reserve.
 */
/** The slots (`delayMs`) of `count` reservations of `k` with a wait of at most 2 s, made at one instant, each expected admitted. */
async function admittedSlots(limiter: Limiter, count: number): Promise<number[]> {
  const slots: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await limiter.reserve('k', 1, { maxDelay: '2s' });
    expect(r.allowed, `reservation ${i}`).toBe(true);
    slots.push(r.delayMs);
  }
  return slots;
}

export function describeReservations(suite: Suite): void {
  /**
   * Runs the sequence as reservations from 10 s on one fresh key, each with `maxDelay` the given share
   * of the longest the algorithm can queue (`maxReserveMs`); an arrival whose gap is 1 more than a multiple of 3 first cancels the
   * previous admitted reservation (which gives back only before its slot). The admitted ones that
   * were not cancelled, at their slots.
   */
  const reserveAt =
    (share: number): Admit =>
    async (algorithm, sequence) => {
      let now = 10_000;
      const limiter = limiterOn(suite.store, algorithm, freshPrefix('reserve'), () => now);
      const admitted: (Admission & { reservation: Reservation; cancelled: boolean })[] = [];
      const maxDelay = Math.floor(algorithm.maxReserveMs * share);
      for (const { gap, cost } of sequence) {
        now += gap;
        const previous = admitted[admitted.length - 1];
        if (gap % 3 === 1 && previous !== undefined && !previous.cancelled && now <= previous.t) {
          await previous.reservation.cancel();
          previous.cancelled = true;
        }
        const reservation = await limiter.reserve('k', cost, { maxDelay });
        if (reservation.allowed) admitted.push({ t: now + reservation.delayMs, cost, reservation, cancelled: false });
      }
      return admitted.filter((a) => !a.cancelled).map(({ t, cost }) => ({ t, cost }));
    };

  /**
   * A test of reservations on `algorithm` (on a store that reserves its kind), its clock at 50 s until
   * the test moves it on (`later(ms)`).
   */
  const reservingFrom50s = (
    name: string,
    algorithm: Algorithm,
    body: (limiter: Limiter, later: (ms: number) => void) => Promise<void>,
  ) =>
    gatedIt(
      name,
      () => reservesAll(suite, [algorithm.kind]),
      () => {
        let now = 50_000;
        const limiter = limiterOn(suite.store, algorithm, freshPrefix('reserve'), () => now);
        return body(limiter, (ms) => (now += ms));
      },
    );

  describe('reservations', () => {
    for (const { kind, bounds = [] } of kindSuites) {
      for (const bound of bounds) {
        for (const share of [1, 0.3]) {
          gatedIt(
            `reserved (maxDelay ${share === 1 ? 'the longest it can queue' : 'a third of it'}), with cancels, at their slots: ${bound.claim}`,
            () => reservesAll(suite, [kind]),
            () => bound.check(reserveAt(share), suite.runs, 1),
          );
        }
      }
    }

    reservingFrom50s(
      'a wait longer than the burst: a token bucket of 2 at 10/s with maxDelay 2 s gives 22 reservations at one instant the slots 0, 0, 100, …, 2000 ms; the 23rd is denied at once',
      tokenBucket({ capacity: 2, refillRate: 10 }),
      async (limiter, later) => {
        expect(await admittedSlots(limiter, 22)).toEqual([
          0,
          0,
          ...Array.from({ length: 20 }, (_, i) => 100 * (i + 1)),
        ]);
        expect(await limiter.reserve('k', 1, { maxDelay: '2s' })).toMatchObject({
          allowed: false,
          delayMs: 0,
          retryAfterMs: 100,
        });
        // The state lives until the bucket has refilled from its debt of 20: a consume is denied until 2.1 s later.
        later(2_099);
        expect((await limiter.consume('k')).allowed).toBe(false);
        later(1);
        expect((await limiter.consume('k')).allowed).toBe(true);
      },
    );

    reservingFrom50s(
      "a shaper's queue as long as the wait: a leaky bucket of 2 at 10/s with maxDelay 2 s queues 20 reservations at one instant (slots 0, 100, …, 1900 ms), denies the 21st at once; consumes and shorter waits meanwhile neither join nor shorten the queue",
      leakyBucket({ capacity: 2, leakRate: 10, mode: 'shape' }),
      async (limiter, later) => {
        expect(await admittedSlots(limiter, 20)).toEqual(Array.from({ length: 20 }, (_, i) => 100 * i));
        expect(await limiter.reserve('k', 1, { maxDelay: '2s' })).toMatchObject({ allowed: false, retryAfterMs: 100 });
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, remaining: 0, resetMs: 2_000 });
        expect((await limiter.reserve('k', 1, { maxDelay: 100 })).allowed).toBe(false);
        // The queue is intact: 100 ms later the next slot is the one after the 20th.
        later(100);
        expect(await limiter.reserve('k', 1, { maxDelay: '2s' })).toMatchObject({ allowed: true, delayMs: 1_900 });
        // Drained by 2.1 s after the first: a full bucket again.
        later(2_000);
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, delayMs: 0, remaining: 1 });
      },
    );

    gatedIt(
      'FIFO: a later reservation never gets an earlier slot',
      () => suite.store.capabilities.reservations === true && samplesFor(suite.store).length > 0,
      () =>
        checkSampledCases(suite, 'fifo', async ({ algorithm, limiter, clock, sequence }) => {
          let lastSlot = -Infinity;
          for (const { gap, cost } of sequence) {
            clock.now += gap;
            const r = await limiter.reserve('k', cost, { maxDelay: algorithm.maxReserveMs });
            // delayMs is whole ms, rounded up: within the horizon rounded up.
            expect(
              Number.isInteger(r.delayMs) && r.delayMs >= 0 && r.delayMs <= Math.ceil(algorithm.maxReserveMs),
            ).toBe(true);
            if (!r.allowed) {
              expect(r.retryAfterMs).toBeGreaterThanOrEqual(1);
              continue;
            }
            expect(clock.now + r.delayMs).toBeGreaterThanOrEqual(lastSlot);
            lastSlot = clock.now + r.delayMs;
          }
        }),
    );

    gatedIt(
      "a maxDelay that is not a duration, negative or above the algorithm's horizon is an InvalidOptionError, and takes nothing",
      () => suite.store.capabilities.reservations === true && samplesFor(suite.store).length > 0,
      async () => {
        for (const sample of samplesFor(suite.store)) {
          const algorithm = sample.make(3, 1000);
          const limiter = limiterOn(suite.store, algorithm, freshPrefix('bad-delay'), () => 5000);
          const before = await limiter.peek('k');
          for (const maxDelay of ['soon', -1, Number.NaN, algorithm.maxReserveMs + 1, null]) {
            const error = await limiter.reserve('k', 1, { maxDelay: maxDelay as never }).then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(error, `${sample.label} maxDelay ${String(maxDelay)}`).toBeInstanceOf(InvalidOptionError);
            expect((error as InvalidOptionError).field).toBe('limiter.reserve.maxDelay');
          }
          expect(await limiter.peek('k'), sample.label).toEqual(before);
        }
        if (runsAll(suite.store, ['concurrency'])) {
          const permits = limiterOn(
            suite.store,
            concurrency({ limit: 1, lease: '1s' }),
            freshPrefix('bad-delay'),
            () => 5000,
          );
          await expect(permits.reserve('k', 1, { maxDelay: 10 })).rejects.toThrow();
        }
      },
    );

    gatedIt(
      'a blocked key cannot reserve: the block is the denial, and a reservation denial starts one',
      () => reservesAll(suite, ['token-bucket']) && suite.store.capabilities.blocks === true,
      async () => {
        let now = 0;
        const algorithm = withBlock(kindSuites.find((k) => k.kind === 'token-bucket')!.samples[0]!(2, 1000), 5000);
        const limiter = createLimiter({
          algorithm,
          store: suite.store,
          clock: () => now,
          prefix: freshPrefix('reserve-block'),
          timeout: false,
          denyCache: false,
        });
        expect((await limiter.reserve('k', 2, { maxDelay: 0 })).allowed).toBe(true);
        // Denied within 200 ms: the block starts with this denial.
        const denied = await limiter.reserve('k', 1, { maxDelay: 200 });
        expect(denied).toMatchObject({ allowed: false, retryAfterMs: 5000, delayMs: 0 });
        now = 4000;
        // The bucket has refilled, the block still runs.
        expect(await limiter.reserve('k', 1, { maxDelay: 1000 })).toMatchObject({ allowed: false, retryAfterMs: 1000 });
        now = 5000;
        expect(await limiter.reserve('k', 1, { maxDelay: 1000 })).toMatchObject({ allowed: true, delayMs: 0 });
      },
    );
  });
}
