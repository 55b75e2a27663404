import { describe, expect } from 'vitest';
import type { Decision } from '../../decision.js';
import { tookNothing, wasNotAsked } from '../../store/charge-marks.js';
import type { Algorithm } from '../../algorithm.js';
import type { Store } from '../../store/interface.js';
import { freshPrefix, gatedIt, rateSamples, runsAll, samplesFor, type RateSample, type Suite } from './suite.js';

/** `consumes` made with a group of `store` open (`holdMs`, each `[key, algorithm, enforced]`), and their decisions. */
async function together(store: Store, holdMs: number, consumes: readonly (readonly [string, Algorithm, boolean])[]): Promise<Decision[]> {
  const group = store.group!(holdMs);
  const answers: (Decision | Promise<Decision>)[] = [];
  try {
    for (const [key, algorithm, enforced] of consumes) {
      group.enforced = enforced;
      answers.push(store.consume(key, algorithm, 1, 1_000));
    }
  } finally {
    group.close();
  }
  return Promise.all(answers);
}

/**
 * A store that decides a request's consumes together (`Store.group`): all-or-nothing, and the marks
 * that say what each decision took. Keys name one hash tag, so a store that groups by Cluster slot
 * puts them in one group. Each rate algorithm first, with the next one the store runs second (at a
 * fixed time, limits per hour). Skipped for a store without `group`.
 */
export function describeGroups(suite: Suite): void {
  const applies = (sample: RateSample) => () => typeof suite.store.group === 'function' && runsAll(suite.store, [sample.kind]);
  const pair = (first: RateSample, firstLimit: number, secondLimit: number) => {
    const samples = samplesFor(suite.store);
    const second = samples[(samples.indexOf(first) + 1) % samples.length]!;
    const tag = freshPrefix('group');
    return { a: first.make(firstLimit, 3_600_000), b: second.make(secondLimit, 3_600_000), keyA: `a:{${tag}}`, keyB: `b:{${tag}}` };
  };

  describe('a request\u2019s consumes decided together (Store.group)', () => {
    for (const sample of rateSamples) {
      gatedIt(`${sample.label} first: a denial by the second takes nothing from the first, which is marked given back`, applies(sample), async () => {
        const store = suite.store;
        const { a, b, keyA, keyB } = pair(sample, 3, 1);
        const first = await together(store, Infinity, [[keyA, a, true], [keyB, b, true]]);
        expect(first.map((d) => [d.allowed, tookNothing(d)])).toEqual([[true, false], [true, false]]);
        const denied = await together(store, Infinity, [[keyA, a, true], [keyB, b, true]]);
        expect(denied.map((d) => [d.allowed, tookNothing(d)])).toEqual([[true, true], [false, false]]);
        // The first limit still has the two units the first request left.
        expect((await store.peek(keyA, a, 0, 1_000)).remaining).toBe(2);
      });

      gatedIt(`${sample.label} first: a denial by the first leaves the second not asked, and it takes nothing`, applies(sample), async () => {
        const store = suite.store;
        const { a, b, keyA, keyB } = pair(sample, 1, 3);
        await together(store, Infinity, [[keyA, a, true], [keyB, b, true]]);
        const denied = await together(store, Infinity, [[keyA, a, true], [keyB, b, true]]);
        expect([denied[0]!.allowed, wasNotAsked(denied[1]!), tookNothing(denied[1]!)]).toEqual([false, true, true]);
        expect((await store.peek(keyB, b, 0, 1_000)).remaining).toBe(2);
      });

      gatedIt(`${sample.label} first, a dry-run one: its denial stops nothing, the second is charged`, applies(sample), async () => {
        const store = suite.store;
        const { a, b, keyA, keyB } = pair(sample, 1, 3);
        await together(store, Infinity, [[keyA, a, false]]);
        const decisions = await together(store, Infinity, [[keyA, a, false], [keyB, b, true]]);
        expect(decisions.map((d) => [d.allowed, tookNothing(d)])).toEqual([[false, false], [true, false]]);
        expect((await store.peek(keyB, b, 0, 1_000)).remaining).toBe(2);
      });
    }
  });
}
