import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyIndex, MAX_SCOPES } from './key-index.js';

/** Every key of `index`, as storage keys, sorted. */
const held = (index: KeyIndex<number>): string[] => [...index.keys()].sort();

describe('KeyIndex: a key is held under the longest scope the index knows that begins it', () => {
  it('a key given alone before its scope is learnt is found by its parts after (moved once)', () => {
    const index = new KeyIndex<number>();
    index.set(undefined, 'p:a', 1);
    index.set(undefined, 'q:a', 2);
    expect(index.get('p:', 'a')).toBe(1);
    index.set('p:', 'a', 3);
    expect(index.get(undefined, 'p:a')).toBe(3);
    expect(index.get('q:', 'a')).toBe(2);
    expect(index.size).toBe(2);
    expect(held(index)).toEqual(['p:a', 'q:a']);
  });

  it('a longer scope learnt after keys of a shorter one takes the keys it begins; every spelling finds them', () => {
    const index = new KeyIndex<number>();
    index.set('p:', 'x:a', 1);
    index.set('p:', 'y:a', 2);
    expect(index.get('p:x:', 'a')).toBe(1);
    // The fast scope 'p:' begins 'p:x:' now: its keys are placed again, not read from its own map.
    expect(index.get('p:', 'x:a')).toBe(1);
    index.set('p:', 'x:b', 3);
    expect(index.get('p:x:', 'b')).toBe(3);
    expect(index.get(undefined, 'p:x:b')).toBe(3);
    expect(index.get('p:', 'y:a')).toBe(2);
    expect(index.size).toBe(3);
    expect(index.take(undefined, 'p:x:a')).toBe(1);
    expect(index.get('p:', 'x:a')).toBeUndefined();
  });

  it(`learns at most ${MAX_SCOPES} scopes, none that begins with \\0 (a digest's mark): such keys are held by their storage key`, () => {
    const index = new KeyIndex<number>();
    for (let i = 0; i < MAX_SCOPES + 10; i++) index.set(`s${i}:`, 'k', i);
    for (let i = 0; i < MAX_SCOPES + 10; i++) {
      expect(index.get(`s${i}:`, 'k')).toBe(i);
      expect(index.get(undefined, `s${i}:k`)).toBe(i);
    }
    index.set('\0d', 'k', 7);
    expect(index.get(undefined, '\0dk')).toBe(7);
    expect(index.size).toBe(MAX_SCOPES + 11);
  });

  it('a cursor passes every key once, scope by scope, and deletes the one it is at', () => {
    const index = new KeyIndex<number>();
    index.set(undefined, 'a', 1);
    index.set('p:', 'b', 2);
    index.set('q:', 'c', 3);
    const cursor = index.cursor();
    const seen: number[] = [];
    while (cursor.next()) {
      seen.push(cursor.value);
      if (cursor.value === 2) cursor.delete();
    }
    expect(seen.sort()).toEqual([1, 2, 3]);
    expect(held(index)).toEqual(['a', 'q:c']);
  });

  it('property: whatever the spellings and their order, the index holds what a Map by storage key holds', () => {
    // Keys of a few segments; a spelling cuts the key after any of its ':' (a scope) or not at all.
    const key = fc
      .array(fc.constantFrom('a', 'b', 'a:', 'b:'), { minLength: 1, maxLength: 4 })
      .map((parts) => parts.join(''));
    const spelt = fc.tuple(key, fc.nat(4)).map(([k, cut]) => {
      const cuts = [...k].flatMap((c, i) => (c === ':' ? [i + 1] : []));
      const at = cut < cuts.length ? cuts[cut]! : undefined;
      return {
        key: k,
        scope: at === undefined ? undefined : k.slice(0, at),
        local: at === undefined ? k : k.slice(at),
      };
    });
    const op = fc.tuple(fc.constantFrom('set', 'get', 'take'), spelt, fc.nat(100));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const index = new KeyIndex<number>();
        const model = new Map<string, number>();
        for (const [kind, { key: k, scope, local }, value] of ops) {
          if (kind === 'set') {
            index.set(scope, local, value);
            model.set(k, value);
          } else if (kind === 'get') expect(index.get(scope, local)).toBe(model.get(k));
          else {
            expect(index.take(scope, local)).toBe(model.get(k));
            model.delete(k);
          }
        }
        expect(held(index)).toEqual([...model.keys()].sort());
        expect(index.size).toBe(model.size);
      }),
      { numRuns: 300 },
    );
  });
});
