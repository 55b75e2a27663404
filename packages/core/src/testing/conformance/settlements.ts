import fc from 'fast-check';
import { describe, expect, vi } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { createLimiter, type Limiter } from '../../limiter/index.js';
import { freshPrefix, gatedIt, rateSamples, runsAll, type Suite } from './suite.js';

/** A request of a random sequence: the estimate charged on arrival and what it really cost. */
const requests = fc.array(
  fc.record({ estimate: fc.integer({ min: 1, max: 10 }), actual: fc.integer({ min: 0, max: 30 }) }),
  { minLength: 1, maxLength: 20 },
);

/**
 * Settling a charge at the request's real cost (`Limiter.settle`, on a store that declares
 * `capabilities.settle`): the difference is charged or given back in the window the request was
 * charged in, a charge never denied and never past `maxDebt`, once per decision.
 */
export function describeSettlements(suite: Suite): void {
  const settles = (): boolean => suite.store.capabilities.settle === true;
  const limiterOf = (
    algorithm: Parameters<typeof createLimiter>[0]['algorithm'],
    clock: () => number,
    maxDebt?: number,
  ) => createLimiter({ algorithm, store: suite.store, clock, prefix: freshPrefix('settle'), timeout: false, maxDebt });

  /**
   * A test of a fixed window of 10 per minute on a store that settles, its clock at `start` (ms) until
   * the test moves it (`at(ms)`), with `maxDebt` when given.
   */
  const onTenPerMinute = (
    name: string,
    { start, maxDebt }: { start: number; maxDebt?: number },
    body: (limiter: Limiter, at: (ms: number) => void) => Promise<void>,
  ) =>
    gatedIt(
      name,
      () => settles() && runsAll(suite.store, ['fixed-window']),
      () => {
        let now = start;
        const limiter = limiterOf(fixedWindow({ limit: 10, window: '1m' }), () => now, maxDebt);
        return body(limiter, (ms) => (now = ms));
      },
    );

  describe('settlements', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: at 10.000 s an estimate of 100 then an actual cost of 350 leaves 650 of 1000; 40 instead leaves 960; a second settle changes nothing`,
        () => settles() && runsAll(suite.store, [sample.kind]),
        async () => {
          const now = 10_000;
          const limiter = limiterOf(sample.make(1000, 60_000), () => now);
          const more = await limiter.consume('more', 100);
          expect(more).toMatchObject({ allowed: true, remaining: 900 });
          await limiter.settle('more', 100, 350, more);
          expect((await limiter.peek('more')).remaining).toBe(650);
          const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
          try {
            await limiter.settle('more', 100, 500, more);
            expect(warn).toHaveBeenCalledWith(
              expect.stringContaining('settled or given back twice'),
              expect.objectContaining({ code: 'RL_ALREADY_SETTLED' }),
            );
          } finally {
            warn.mockRestore();
          }
          expect((await limiter.peek('more')).remaining).toBe(650);
          const less = await limiter.consume('less', 100);
          await limiter.settle('less', 100, 40, less);
          expect((await limiter.peek('less')).remaining).toBe(960);
        },
      );

      gatedIt(
        `${sample.label}: after every settle at one instant, what the key has used is the sum of the actual costs, exactly`,
        () => settles() && runsAll(suite.store, [sample.kind]),
        async () => {
          await fc.assert(
            fc.asyncProperty(requests, async (sequence) => {
              const now = 20_000;
              const limiter = limiterOf(sample.make(1000, 60_000), () => now);
              let used = 0;
              for (const { estimate, actual } of sequence) {
                const decision = await limiter.consume('k', estimate);
                expect(decision.allowed).toBe(true);
                await limiter.settle('k', estimate, actual, decision);
                used += actual;
                expect((await limiter.peek('k')).remaining).toBe(1000 - used);
              }
            }),
            { numRuns: Math.max(5, Math.round(suite.runs / 4)) },
          );
        },
      );
    }

    gatedIt(
      'token bucket of 100 at 10/s, maxDebt 250: an estimate of 100 settled at 350 puts the bucket 250 in debt; a request of 1 waits (250 + 1) / rate',
      () => settles() && runsAll(suite.store, ['token-bucket']),
      async () => {
        let now = 30_000;
        const limiter = limiterOf(tokenBucket({ capacity: 100, refillRate: 10 }), () => now, 250);
        const decision = await limiter.consume('k', 100);
        await limiter.settle('k', 100, 350, decision);
        expect(await limiter.consume('k', 1)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 25_100 });
        now += 25_099;
        expect((await limiter.consume('k', 1)).allowed).toBe(false);
        now += 1;
        expect((await limiter.consume('k', 1)).allowed).toBe(true);
      },
    );

    gatedIt(
      'token bucket of 100, default maxDebt (the capacity): a settle of 1,000 more puts the bucket at most 100 in debt',
      () => settles() && runsAll(suite.store, ['token-bucket']),
      async () => {
        const now = 40_000;
        const limiter = limiterOf(tokenBucket({ capacity: 100, refillRate: 10 }), () => now);
        const decision = await limiter.consume('k', 10);
        await limiter.settle('k', 10, 1010, decision);
        // 90 left, 1,000 more asked: the balance stops at -100, 10 s of refill and 0.1 s for the request.
        expect((await limiter.consume('k', 1)).retryAfterMs).toBe(10_100);
      },
    );

    onTenPerMinute(
      'fixed window of 10 per minute: a settle after the window it was charged in has ended charges nothing in the new one',
      { start: 60_000 + 59_000 },
      async (limiter, at) => {
        const decision = await limiter.consume('k', 2);
        at(120_000 + 1_000);
        await limiter.settle('k', 2, 9, decision);
        expect((await limiter.peek('k')).remaining).toBe(10);
        // Nothing was written: a clock that goes back into the window of the charge finds its count as it was.
        at(119_900);
        expect(await limiter.consume('k', 1)).toMatchObject({ allowed: true, remaining: 7 });
      },
    );

    onTenPerMinute(
      'fixed window of 10 per minute: a settle in the window of the charge may take it past its limit (up to maxDebt), and denies until the window ends',
      { start: 180_000 + 1_000, maxDebt: 5 },
      async (limiter, at) => {
        const decision = await limiter.consume('k', 10);
        await limiter.settle('k', 10, 30, decision);
        at(182_000);
        expect(await limiter.consume('k', 1)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 58_000 });
        at(240_000);
        expect(await limiter.consume('k', 1)).toMatchObject({ allowed: true, remaining: 9 });
      },
    );

    onTenPerMinute(
      'a denial, and a decision given back, settle nothing; a bad actual cost is an InvalidCostError and changes nothing',
      { start: 250_000 },
      async (limiter) => {
        const full = await limiter.consume('k', 10);
        const denied = await limiter.consume('k', 1);
        await limiter.settle('k', 1, 5, denied);
        expect((await limiter.peek('k')).remaining).toBe(0);
        for (const bad of [-1, Number.NaN, Infinity, '3', undefined]) {
          await expect(limiter.settle('k', 10, bad as number, full)).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
        }
        await limiter.undo('k', 10, full);
        const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
        try {
          await limiter.settle('k', 10, 1, full);
        } finally {
          warn.mockRestore();
        }
        expect((await limiter.peek('k')).remaining).toBe(10);
      },
    );
  });
}
