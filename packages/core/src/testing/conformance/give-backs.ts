import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import type { Decision } from '../../decision.js';
import { createLimiter } from '../../limiter/index.js';
import { StepStore } from '../step-store.js';
import { freshPrefix, gatedIt, limiterOn, rateSamples, runsAll, type Suite } from './suite.js';

/** One request of a random sequence with give-backs: its time after the previous one, its cost, and when (if ever) it is given back. */
interface Charge {
  gap: number;
  cost: number;
  /** Ms after its charge at which an admitted request is given back; `undefined`: never. */
  backAfter: number | undefined;
}

const charges = (windowMs: number): fc.Arbitrary<Charge[]> =>
  fc.array(
    fc.record({
      gap: fc.integer({ min: 0, max: windowMs }),
      cost: fc.integer({ min: 1, max: 2 }),
      backAfter: fc.option(fc.integer({ min: 0, max: 2 * windowMs }), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 16 },
  );

/** A charge that was admitted: its time and cost, and the time it is given back (Infinity: never). */
interface Admitted {
  t: number;
  cost: number;
  decision: Decision;
  backAt: number;
}

/**
 * Give-backs at a later time (a response whose outcome is not counted) go only to the window the
 * request was charged in, and never raise a balance above what it would be had the request not been
 * charged. The model is the reference store (each algorithm's own step) running the same admitted
 * charges without those given back.
 */
export function describeGiveBacks(suite: Suite): void {
  describe('give-backs', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: after give-backs at later times, the balance is never above that of the same charges without them`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          await fc.assert(
            fc.asyncProperty(
              fc.integer({ min: 2, max: 5 }),
              fc.integer({ min: 100, max: 2000 }),
              charges(2000),
              async (limit, windowMs, sequence) => {
                let now = 10_000;
                const algorithm = sample.make(limit, windowMs);
                const limiter = limiterOn(suite.store, algorithm, freshPrefix('give-back'), () => now);
                // The charges, then every give-back in time order (each after its own charge).
                const admitted: Admitted[] = [];
                const events: { t: number; run: () => Promise<void> }[] = [];
                let t = now;
                for (const { gap, cost, backAfter } of sequence) {
                  t += gap;
                  const at = t;
                  events.push({
                    t: at,
                    run: async () => {
                      const decision = await limiter.consume('k', cost);
                      if (!decision.allowed) return;
                      const entry: Admitted = {
                        t: at,
                        cost,
                        decision,
                        backAt: backAfter === undefined ? Infinity : at + backAfter,
                      };
                      admitted.push(entry);
                      if (backAfter !== undefined) {
                        events.push({ t: entry.backAt, run: () => limiter.undo('k', cost, decision) });
                      }
                    },
                  });
                }
                // Consumes first among events at one time, then give-backs, in the order they were made.
                for (let i = 0; i < events.length; i++) {
                  let next = i;
                  for (let j = i + 1; j < events.length; j++) if (events[j]!.t < events[next]!.t) next = j;
                  const [event] = events.splice(next, 1);
                  events.splice(i, 0, event!);
                  now = event!.t;
                  await event!.run();
                  // After each step: the balance against the charges kept so far, on the model.
                  const model = new StepStore();
                  for (const a of admitted)
                    if (a.backAt > now) model.charge({ key: 'k', algorithm, cost: a.cost }, a.t);
                  for (const later of [now, now + windowMs / 2, now + windowMs]) {
                    now = later;
                    const actual = await limiter.peek('k');
                    const expected = model.peek('k', algorithm, 0, later);
                    expect(actual.remaining, `at ${later} ms`).toBeLessThanOrEqual(expected.remaining);
                  }
                  now = event!.t;
                }
              },
            ),
            { numRuns: suite.runs },
          );
        },
      );
    }

    // A shaper is left out: it takes no quota lease, and its give-back cancels a queued slot whole.
    for (const sample of rateSamples.filter((s) => !s.make(10, 60_000).mayDelay)) {
      gatedIt(
        `${sample.label}: a give-back of part of a charge, with the time of the charge (a quota lease's unused units), gives back that part`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 10_000;
          const algorithm = sample.make(10, 60_000);
          const limiter = limiterOn(suite.store, algorithm, freshPrefix('give-back-part'), () => now);
          const alone = limiterOn(suite.store, algorithm, freshPrefix('give-back-part-alone'), () => now);
          const decision = await limiter.consume('k', 5);
          expect(decision.allowed).toBe(true);
          await alone.consume('k', 3);
          now = 10_500;
          await limiter.undo('k', 2, decision);
          expect((await limiter.peek('k')).remaining).toBe((await alone.peek('k')).remaining);
        },
      );
    }

    gatedIt(
      'a give-back forgets the cached denial: fixed window 2 per hour, three consumes, undo, the freed unit is admitted',
      () => runsAll(suite.store, ['fixed-window']),
      async () => {
        const limiter = createLimiter({
          algorithm: fixedWindow({ limit: 2, window: '1h' }),
          store: suite.store,
          clock: () => 1_000,
          prefix: freshPrefix('deny-cache'),
          timeout: false,
          denyCache: true,
        });
        await limiter.consume('k');
        await limiter.consume('k');
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 3_599_000 });
        await limiter.undo('k');
        expect((await limiter.peek('k')).remaining).toBe(1);
        const freed = await limiter.consume('k');
        expect(freed.allowed).toBe(true);
        expect(freed.reason).toBeUndefined();
        // The next one is denied by the store, and cached again (where the store hears every
        // instance's resets: a deny cache remembers nothing otherwise); a reset forgets it too.
        expect(await limiter.consume('k')).toMatchObject({ allowed: false });
        const cached = suite.store.capabilities.hearsEveryInstance === false ? {} : { reason: 'deny-cache' };
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, ...cached });
        await limiter.reset('k');
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1 });
      },
    );
  });
}
