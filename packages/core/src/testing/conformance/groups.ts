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

/** What an answer of {@link together} says: `[allowed, took]`. */
const allowedAndTook = (charged: Charged): [boolean, Charged['took']] => [charged.decision.allowed, charged.took];

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
    const a = first.make(firstLimit, 3_600_000);
    const b = second.make(secondLimit, 3_600_000);
    const keyA = `a:{${tag}}`;
    const keyB = `b:{${tag}}`;
    /** A request charging both, both enforced. */
    const bothEnforced = () =>
      together(suite.store, Infinity, [
        [keyA, a, true],
        [keyB, b, true],
      ]);
    return { a, b, keyA, keyB, bothEnforced };
  };

  describe('a request\u2019s charges decided together (Store.chargeAll)', () => {
    for (const sample of rateSamples) {
      /** A test named `<sample> first<rest>` on a pair (see `pair`) of `firstLimit` and `secondLimit` per hour, the first of `sample`. */
      const pairIt = (
        rest: string,
        [firstLimit, secondLimit]: [number, number],
        body: (p: ReturnType<typeof pair>) => Promise<void>,
      ) => gatedIt(`${sample.label} first${rest}`, applies(sample), () => body(pair(sample, firstLimit, secondLimit)));

      pairIt(
        ': a denial by the second takes nothing from the first, which is rolled back',
        [3, 1],
        async ({ a, keyA, bothEnforced }) => {
          const store = suite.store;
          const first = await bothEnforced();
          expect(first.map(allowedAndTook)).toEqual([
            [true, 'charged'],
            [true, 'charged'],
          ]);
          const denied = await bothEnforced();
          expect(denied.map(allowedAndTook)).toEqual([
            [true, 'rolled-back'],
            [false, 'charged'],
          ]);
          // The first limit still has the two units the first request left.
          expect((await store.peek(keyA, a, 0, 1_000)).remaining).toBe(2);
        },
      );

      pairIt(
        ': a denial by the first leaves the second not asked, and it takes nothing',
        [1, 3],
        async ({ b, keyB, bothEnforced }) => {
          const store = suite.store;
          await bothEnforced();
          const denied = await bothEnforced();
          expect([denied[0]!.decision.allowed, denied[0]!.took, denied[1]!.took]).toEqual([
            false,
            'charged',
            'not-asked',
          ]);
          expect((await store.peek(keyB, b, 0, 1_000)).remaining).toBe(2);
        },
      );

      pairIt(
        ', a dry-run one: its denial stops nothing, the second is charged',
        [1, 3],
        async ({ a, b, keyA, keyB }) => {
          const store = suite.store;
          await together(store, Infinity, [[keyA, a, false]]);
          const answers = await together(store, Infinity, [
            [keyA, a, false],
            [keyB, b, true],
          ]);
          expect(answers.map(allowedAndTook)).toEqual([
            [false, 'charged'],
            [true, 'charged'],
          ]);
          expect((await store.peek(keyB, b, 0, 1_000)).remaining).toBe(2);
        },
      );
    }
  });
}
