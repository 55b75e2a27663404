import { describe, expect } from 'vitest';
import type { Algorithm } from '../../algorithm.js';
import type { Charged, Store } from '../../store/interface.js';
import { freshPrefix, gatedIt, rateSamples, runsAll, samplesFor, type RateSample, type Suite } from './suite.js';

/** The charges of one request (each `[key, algorithm, enforced]`, 1 unit at 1 000 ms) decided together by `store.chargeAll` (`holdMs`), and their answers. */
function together(
  store: Store,
  holdMs: number,
  charges: readonly (readonly [string, Algorithm, boolean])[],
): Promise<Charged[]> {
  return Promise.all(
    store.chargeAll!(
      charges.map(([key, algorithm, enforced]) => ({ charge: { key, algorithm, cost: 1, enforced }, now: 1_000 })),
      { holdMs },
    ),
  );
}

/**
 * A store that decides a request's charges together (`Store.chargeAll`): all-or-nothing, and each
 * answer's `took` saying what its charge took. Keys name one hash tag, so a store that groups by
 * Cluster slot decides them in one step. Each rate algorithm first, with the next one the store runs
 * second (at a fixed time, limits per hour). Skipped for a store without `chargeAll`.
 */
export function describeGroups(suite: Suite): void {
  const applies = (sample: RateSample) => () =>
    typeof suite.store.chargeAll === 'function' && runsAll(suite.store, [sample.kind]);
  const pair = (first: RateSample, firstLimit: number, secondLimit: number) => {
    const samples = samplesFor(suite.store);
    const second = samples[(samples.indexOf(first) + 1) % samples.length]!;
    const tag = freshPrefix('group');
    return {
      a: first.make(firstLimit, 3_600_000),
      b: second.make(secondLimit, 3_600_000),
      keyA: `a:{${tag}}`,
      keyB: `b:{${tag}}`,
    };
  };

  describe('a request\u2019s charges decided together (Store.chargeAll)', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label} first: a denial by the second takes nothing from the first, which is rolled back`,
        applies(sample),
        async () => {
          const store = suite.store;
          const { a, b, keyA, keyB } = pair(sample, 3, 1);
          const first = await together(store, Infinity, [
            [keyA, a, true],
            [keyB, b, true],
          ]);
          expect(first.map((c) => [c.decision.allowed, c.took])).toEqual([
            [true, 'charged'],
            [true, 'charged'],
          ]);
          const denied = await together(store, Infinity, [
            [keyA, a, true],
            [keyB, b, true],
          ]);
          expect(denied.map((c) => [c.decision.allowed, c.took])).toEqual([
            [true, 'rolled-back'],
            [false, 'charged'],
          ]);
          // The first limit still has the two units the first request left.
          expect((await store.peek(keyA, a, 0, 1_000)).remaining).toBe(2);
        },
      );

      gatedIt(
        `${sample.label} first: a denial by the first leaves the second not asked, and it takes nothing`,
        applies(sample),
        async () => {
          const store = suite.store;
          const { a, b, keyA, keyB } = pair(sample, 1, 3);
          await together(store, Infinity, [
            [keyA, a, true],
            [keyB, b, true],
          ]);
          const denied = await together(store, Infinity, [
            [keyA, a, true],
            [keyB, b, true],
          ]);
          expect([denied[0]!.decision.allowed, denied[0]!.took, denied[1]!.took]).toEqual([
            false,
            'charged',
            'not-asked',
          ]);
          expect((await store.peek(keyB, b, 0, 1_000)).remaining).toBe(2);
        },
      );

      gatedIt(
        `${sample.label} first, a dry-run one: its denial stops nothing, the second is charged`,
        applies(sample),
        async () => {
          const store = suite.store;
          const { a, b, keyA, keyB } = pair(sample, 1, 3);
          await together(store, Infinity, [[keyA, a, false]]);
          const answers = await together(store, Infinity, [
            [keyA, a, false],
            [keyB, b, true],
          ]);
          expect(answers.map((c) => [c.decision.allowed, c.took])).toEqual([
            [false, 'charged'],
            [true, 'charged'],
          ]);
          expect((await store.peek(keyB, b, 0, 1_000)).remaining).toBe(2);
        },
      );
    }
  });
}
