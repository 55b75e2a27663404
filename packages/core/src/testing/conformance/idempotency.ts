import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { createLimiter, type LimiterOptions } from '../../limiter/index.js';
import { wasConflict, wasReplayed } from '../../store/charge-marks.js';
import { freshPrefix, gatedIt, rateSamples, runsAll, type Suite } from './suite.js';

/**
 * Idempotent charges (`consume(key, cost, { idempotencyKey })`, on a store that declares
 * `capabilities.idempotency`): a retry with the same id and fingerprint, within the ttl, gets the
 * earlier admitting decision back and is charged nothing; a denial is never remembered; an id of
 * another fingerprint is charged as new and marked; a give-back forgets the id; a key remembers at most
 * `idempotencyMaxIds` ids.
 */
export function describeIdempotency(suite: Suite): void {
  const remembers = (): boolean => suite.store.capabilities.idempotency === true;
  const limiterOf = (algorithm: LimiterOptions['algorithm'], clock: () => number, options: Partial<LimiterOptions> = {}) =>
    createLimiter({ algorithm, store: suite.store, clock, prefix: freshPrefix('idem'), timeout: false, denyCache: false, ...options });

  describe('idempotent charges', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: 10 retries of one request are charged once, and answered with its decision (its at, allowed, the numbers of now); another id is charged`,
        () => remembers() && runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 10_000;
          const limiter = limiterOf(sample.make(100, 60_000), () => now);
          const first = await limiter.consume('k', 2, { idempotencyKey: 'order-1' });
          expect([first.allowed, first.remaining, wasReplayed(first)]).toEqual([true, 98, false]);
          for (let i = 0; i < 10; i++) {
            now += 1;
            const retry = await limiter.consume('k', 2, { idempotencyKey: 'order-1' });
            expect([retry.allowed, retry.remaining, retry.at, wasReplayed(retry)]).toEqual([true, 98, first.at, true]);
          }
          const other = await limiter.consume('k', 2, { idempotencyKey: 'order-2' });
          expect([other.remaining, wasReplayed(other)]).toEqual([96, false]);
          expect((await limiter.peek('k')).remaining).toBe(96);
        },
      );
    }

    gatedIt('a denial is never remembered: a retry of a denied request is decided afresh, and charged once admitted', () => remembers() && runsAll(suite.store, ['fixed-window']), async () => {
      let now = 60_000;
      const limiter = limiterOf(fixedWindow({ limit: 1, window: '1m' }), () => now);
      await limiter.consume('k');
      const denied = await limiter.consume('k', 1, { idempotencyKey: 'late' });
      expect([denied.allowed, wasReplayed(denied)]).toEqual([false, false]);
      expect((await limiter.consume('k', 1, { idempotencyKey: 'late' })).allowed).toBe(false);
      now = 120_000;
      const admitted = await limiter.consume('k', 1, { idempotencyKey: 'late' });
      expect([admitted.allowed, wasReplayed(admitted), admitted.remaining]).toEqual([true, false, 0]);
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'late' }))).toBe(true);
    });

    gatedIt('an id reused with another fingerprint is charged as new and marked a conflict; a retry of the first still gets its decision', () => remembers() && runsAll(suite.store, ['fixed-window']), async () => {
      const limiter = limiterOf(fixedWindow({ limit: 10, window: '1h' }), () => 1_000);
      await limiter.consume('k', 1, { idempotencyKey: 'x', fingerprint: 'POST /orders 1' });
      const reused = await limiter.consume('k', 1, { idempotencyKey: 'x', fingerprint: 'DELETE /orders 1' });
      expect([reused.allowed, reused.remaining, wasConflict(reused), wasReplayed(reused)]).toEqual([true, 8, true, false]);
      const again = await limiter.consume('k', 1, { idempotencyKey: 'x', fingerprint: 'POST /orders 1' });
      expect([again.remaining, wasReplayed(again)]).toEqual([8, true]);
      // The default fingerprint is the cost: a retry of another cost is another request.
      await limiter.consume('k', 1, { idempotencyKey: 'y' });
      expect(wasConflict(await limiter.consume('k', 3, { idempotencyKey: 'y' }))).toBe(true);
    });

    gatedIt('after idempotencyTtl a retry is charged; a give-back forgets the id (its retry is charged); reset forgets every id', () => remembers() && runsAll(suite.store, ['fixed-window']), async () => {
      let now = 3_600_000;
      const limiter = limiterOf(fixedWindow({ limit: 100, window: '1h' }), () => now, { idempotencyTtl: '1s' });
      await limiter.consume('k', 1, { idempotencyKey: 'a' });
      now += 999;
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'a' }))).toBe(true);
      now += 1;
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'a' }))).toBe(false);
      expect((await limiter.peek('k')).remaining).toBe(98);
      const given = await limiter.consume('k', 1, { idempotencyKey: 'b' });
      await limiter.undo('k', 1, given);
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'b' }))).toBe(false);
      await limiter.reset('k');
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'b' }))).toBe(false);
      expect((await limiter.peek('k')).remaining).toBe(99);
    });

    gatedIt('a key remembers at most idempotencyMaxIds ids: the oldest is forgotten first', () => remembers() && runsAll(suite.store, ['fixed-window']), async () => {
      let now = 5_000;
      const limiter = limiterOf(fixedWindow({ limit: 100, window: '1h' }), () => now, { idempotencyMaxIds: 3 });
      for (const id of ['1', '2', '3', '4']) {
        now += 1;
        await limiter.consume('k', 1, { idempotencyKey: id });
      }
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: '4' }))).toBe(true);
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: '2' }))).toBe(true);
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: '1' }))).toBe(false);
      expect((await limiter.peek('k')).remaining).toBe(95);
    });

    gatedIt('a give-back of a replay gives nothing back and keeps the record; a give-back of a conflict keeps the first request\'s record', () => remembers() && runsAll(suite.store, ['fixed-window']), async () => {
      const limiter = limiterOf(fixedWindow({ limit: 10, window: '1h' }), () => 1_000);
      await limiter.consume('b', 3, { idempotencyKey: 'Y' });
      const replay = await limiter.consume('b', 3, { idempotencyKey: 'Y' });
      await limiter.undo('b', 3, replay);
      expect((await limiter.peek('b')).remaining).toBe(7);
      expect(wasReplayed(await limiter.consume('b', 3, { idempotencyKey: 'Y' }))).toBe(true);
      await limiter.consume('a', 1, { idempotencyKey: 'X', fingerprint: 'POST /orders' });
      const conflict = await limiter.consume('a', 1, { idempotencyKey: 'X', fingerprint: 'DELETE /orders' });
      await limiter.undo('a', 1, conflict);
      expect(wasReplayed(await limiter.consume('a', 1, { idempotencyKey: 'X', fingerprint: 'POST /orders' }))).toBe(true);
      expect((await limiter.peek('a')).remaining).toBe(9);
    });

    gatedIt('with a quota lease: an idempotent charge goes to the store, and its give-back forgets the id there (never into a block)', () => remembers() && runsAll(suite.store, ['fixed-window']), async () => {
      const limiter = limiterOf(fixedWindow({ limit: 20, window: '1h' }), () => 5_000, { lease: { units: 10, ttl: '10s' } });
      await limiter.consume('k');
      const charged = await limiter.consume('k', 1, { idempotencyKey: 'A' });
      await limiter.undo('k', 1, charged);
      expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'A' }))).toBe(false);
      let admitted = 2;
      for (let i = 0; i < 30; i++) if ((await limiter.consume('k')).allowed) admitted++;
      expect(admitted).toBe(20);
      await limiter.close();
    });

    gatedIt('a reservation retried gets its slot back, less the time passed, and queues nothing more', () => remembers() && suite.store.capabilities.reservations === true && runsAll(suite.store, ['token-bucket']), async () => {
      let now = 7_000;
      const limiter = limiterOf(tokenBucket({ capacity: 1, refillRate: 1 }), () => now);
      await limiter.consume('k');
      const first = await limiter.reserve('k', 1, { maxDelay: '1s', idempotencyKey: 'r' });
      expect([first.allowed, first.delayMs]).toEqual([true, 1000]);
      now += 400;
      const retry = await limiter.reserve('k', 1, { maxDelay: '1s', idempotencyKey: 'r' });
      expect([retry.allowed, retry.delayMs, wasReplayed(retry)]).toEqual([true, 600, true]);
      expect((await limiter.reserve('k', 1, { maxDelay: '2s' })).delayMs).toBe(1600);
    });
  });
}
