import { describe, expect } from 'vitest';
import type { Algorithm } from '../../algorithm.js';
import type { Charge, Store } from '../../store/interface.js';
import { freshPrefix, gatedIt, rateSamples, runsAll, type Suite } from './suite.js';

const HOUR = 3_600_000;
const NOW = 10_000;

/** One way to write a storage key in a charge: its parts (`scope + local === key`), or none. */
type Spelling = readonly [scope: string, local: string] | undefined;

/** A charge of one unit of `key` at {@link NOW}, spelt `spelling` (its parts, or the storage key alone). */
const charge = async (store: Store, key: string, algorithm: Algorithm, spelling: Spelling): Promise<boolean> => {
  const record: Charge =
    spelling === undefined
      ? { key, algorithm, cost: 1 }
      : { key, scope: spelling[0], local: spelling[1], algorithm, cost: 1 };
  expect(spelling === undefined || spelling[0] + spelling[1] === key).toBe(true);
  return (await store.charge(record, NOW)).decision.allowed;
};

/**
 * A charge's key parts (`Charge.scope` and `Charge.local`, `scope + local === key`) never change what
 * the storage key names: however a key is spelt (with the parts of any scope that begins it, or alone),
 * in whatever order the spellings come, it is one state, as on a store that reads only `key`. The
 * memory store indexes by the parts and resolves a key given alone to the longest scope it knows that
 * begins it; these cases hold it to that.
 */
export function describeKeyParts(suite: Suite): void {
  describe('key parts (Charge.scope, Charge.local): every spelling of a storage key is one state', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a key charged with its parts, alone, and with the parts of a longer scope is one state, learnt in either order`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          const store = suite.store;
          const base = `${freshPrefix('parts')}:`;
          const algorithm = sample.make(3, HOUR);
          // Alone first, then the limiter's parts, then a scope that begins a longer part of it.
          const a = `${base}x:a`;
          expect(await charge(store, a, algorithm, undefined)).toBe(true);
          expect(await charge(store, a, algorithm, [base, 'x:a'])).toBe(true);
          expect(await charge(store, a, algorithm, [`${base}x:`, 'a'])).toBe(true);
          expect(await charge(store, a, algorithm, undefined)).toBe(false);
          expect(await charge(store, a, algorithm, [base, 'x:a'])).toBe(false);
          // The longer scope is known now: a key of it charged first with the shorter scope's parts.
          const b = `${base}x:b`;
          expect(await charge(store, b, algorithm, [base, 'x:b'])).toBe(true);
          expect(await charge(store, b, algorithm, [`${base}x:`, 'b'])).toBe(true);
          expect(await charge(store, b, algorithm, undefined)).toBe(true);
          expect(await charge(store, b, algorithm, [`${base}x:`, 'b'])).toBe(false);
          // The same local part under two scopes: two keys.
          const other = `${freshPrefix('parts')}:`;
          expect(await charge(store, `${other}x:a`, algorithm, [other, 'x:a'])).toBe(true);
        },
      );

      gatedIt(
        `${sample.label}: a key charged with its parts is peeked, given back and reset by its storage key alone`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          const store = suite.store;
          const scope = `${freshPrefix('parts')}:`;
          const key = `${scope}k`;
          const algorithm = sample.make(1, HOUR);
          expect(await charge(store, key, algorithm, [scope, 'k'])).toBe(true);
          expect((await store.peek(key, algorithm, 1, NOW)).allowed).toBe(false);
          await store.giveBack({ key, algorithm, cost: 1 }, NOW);
          expect((await store.peek(key, algorithm, 1, NOW)).allowed).toBe(true);
          expect(await charge(store, key, algorithm, [scope, 'k'])).toBe(true);
          await store.reset(key, algorithm);
          expect(await charge(store, key, algorithm, [scope, 'k'])).toBe(true);
          // A give-back with the parts, of a charge made alone.
          await store.giveBack({ key, scope, local: 'k', algorithm, cost: 1 }, NOW);
          expect(await charge(store, key, algorithm, undefined)).toBe(true);
          expect(await charge(store, key, algorithm, undefined)).toBe(false);
        },
      );
    }

    gatedIt(
      'a long key (past any store bound) with its parts and alone is one state',
      () => runsAll(suite.store, ['fixed-window']),
      async () => {
        const store = suite.store;
        const scope = `${freshPrefix('parts')}:`;
        const local = 'k'.repeat(300);
        const algorithm = rateSamples.find((s) => s.kind === 'fixed-window')!.make(2, HOUR);
        expect(await charge(store, scope + local, algorithm, [scope, local])).toBe(true);
        expect(await charge(store, scope + local, algorithm, undefined)).toBe(true);
        expect(await charge(store, scope + local, algorithm, [scope, local])).toBe(false);
      },
    );
  });
}
