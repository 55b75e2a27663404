import { describe, expect } from 'vitest';
import {
  freshPrefix,
  gatedIt,
  limiterOn,
  rateSamples,
  runsAll,
  samplesFor,
  type RateSample,
  type Suite,
} from './suite.js';

/** One sample per kind: different kinds keep their state apart, configurations of one kind share it. */
const onePerKind = (samples: readonly RateSample[]): RateSample[] =>
  samples.filter((s, i) => samples.findIndex((o) => o.kind === s.kind) === i);

/** Bad costs and keys are rejected with their typed error before any state changes. */
export function describeBadInput(suite: Suite): void {
  describe('bad input changes no state', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: rejects NaN, ±Infinity, 0, negative, non-number and over-capacity costs`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          const limiter = limiterOn(suite.store, sample.make(10, 1000), freshPrefix('cost'), () => 5_000);
          await limiter.consume('k', 3);
          const before = await limiter.peek('k');
          for (const cost of [
            Number.NaN,
            Infinity,
            -Infinity,
            0,
            -1,
            '2' as unknown as number,
            null as unknown as number,
          ]) {
            await expect(limiter.consume('k', cost)).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
          }
          await expect(limiter.consume('k', 11)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
          await expect(limiter.peek('k', -1)).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
          for (const key of ['', undefined as unknown as string, 42 as unknown as string]) {
            await expect(limiter.consume(key)).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
          }
          expect(await limiter.peek('k')).toEqual(before);
          expect(before.remaining).toBe(7);
        },
      );
    }
  });
}

/** Keys, prefixes and kinds never share state; any string is a safe key. */
export function describeIsolation(suite: Suite): void {
  const runsARate = () => samplesFor(suite.store).length > 0;
  describe('isolation', () => {
    gatedIt('keys, prefixes and algorithm kinds never share state', runsARate, async () => {
      const [first, ...others] = onePerKind(samplesFor(suite.store));
      const prefix = freshPrefix('iso');
      const a = limiterOn(suite.store, first!.make(2, 60_000), prefix, () => 0);
      const b = limiterOn(suite.store, first!.make(2, 60_000), `${prefix}-other`, () => 0);
      await a.consume('user', 2);
      expect((await a.consume('user')).allowed).toBe(false);
      expect((await a.consume('user2')).allowed).toBe(true);
      expect((await b.consume('user', 2)).allowed).toBe(true);
      for (const other of others) {
        expect(
          (await limiterOn(suite.store, other.make(2, 60_000), prefix, () => 0).consume('user', 2)).allowed,
          other.label,
        ).toBe(true);
      }
    });

    gatedIt(
      'keys with braces, colons, unicode, binary-like and very long strings are distinct and safe',
      runsARate,
      async () => {
        const limiter = limiterOn(
          suite.store,
          samplesFor(suite.store)[0]!.make(1, 60_000),
          freshPrefix('keys'),
          () => 0,
        );
        const keys = [
          '{',
          '}',
          '{}',
          '}{',
          'a{b}c',
          '{a}',
          'x:y:z',
          'ключ-🔑',
          '\u0000\u0001\uffff',
          'k'.repeat(10_000),
          ' ',
        ];
        for (const key of keys)
          expect((await limiter.consume(key)).allowed, JSON.stringify(key.slice(0, 20))).toBe(true);
        for (const key of keys)
          expect((await limiter.consume(key)).allowed, JSON.stringify(key.slice(0, 20))).toBe(false);
      },
    );
  });
}

/** Without an explicit clock the store decides on its own clock. */
export function describeOwnClock(suite: Suite): void {
  describe("the store's own clock", () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: decides without an explicit clock`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          const algorithm = sample.make(2, 3_600_000);
          // A first request's resetMs is largest at the very start of a window (for a bucket it is the same at any time).
          const atWindowStart = await limiterOn(suite.store, algorithm, freshPrefix('window-start'), () => 0).consume(
            'k',
          );
          const limiter = limiterOn(suite.store, algorithm, freshPrefix('own-clock'), undefined);
          const first = await limiter.consume('k');
          expect(first).toMatchObject({ allowed: true, remaining: 1 });
          expect(first.resetMs).toBeGreaterThan(0);
          expect(first.resetMs).toBeLessThanOrEqual(atWindowStart.resetMs);
          await limiter.consume('k');
          expect((await limiter.consume('k')).allowed).toBe(false);
        },
      );
    }
  });
}
