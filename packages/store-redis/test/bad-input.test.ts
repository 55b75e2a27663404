/**
 * Bad input reaching Redis never corrupts a state: a `now` that is not a finite number (an app clock
 * that returned NaN or an infinity) is refused by every script before it reads or writes anything
 * (prelude.lua), and the store rejects with a StoreError.
 */
import { describe, expect, it } from 'vitest';
import { concurrency, type Algorithm } from '@rl/core';
import type { ConcurrencyAlgorithm } from '@rl/core/store';
import { RedisStore } from '@rl/store-redis';
import { everyRateAlgorithm, useRedis } from '@rl/test-support';

const redis = useRedis('bad-input');

const algorithms: Algorithm[] = [...everyRateAlgorithm(3), concurrency({ limit: 3, lease: '1h' })];
const nameOf = (a: Algorithm) => `${a.kind}${a.options.mode === 'shape' ? ' (shape)' : ''}`;

/** Everything Redis holds for `key`: its field of a bucket (compact layout) or the dump of each of its keys. */
async function stateOf(store: RedisStore, key: string, algorithm: Algorithm): Promise<(string | null)[]> {
  const client = redis.client;
  const keys = store.redisKeys(key, algorithm);
  const field = store.redisField(key, algorithm);
  if (field !== undefined) return [(await client.hgetBuffer(keys[0]!, field))?.toString('hex') ?? null];
  return Promise.all(keys.map(async (k) => (await client.dumpBuffer(k))?.toString('hex') ?? null));
}

describe('a now that is not a finite number', () => {
  it.each(algorithms.map((a) => [nameOf(a), a] as const))(
    '%s: NaN, Infinity and -Infinity reject with a StoreError and write nothing',
    async (_n, algorithm) => {
      const store = new RedisStore({ client: redis.client, prefix: redis.freshPrefix() });
      const leases = algorithm.stateKind === 'leases';
      const decide = (key: string, now: number) =>
        leases
          ? store.acquire(key, algorithm as ConcurrencyAlgorithm, `lease-${now}`, now)
          : store.charge({ key, algorithm, cost: 1 }, now).then((c) => c.decision);
      // A state exists for one key, none for the other.
      expect((await decide('kept', 1_000)).allowed).toBe(true);
      const kept = await stateOf(store, 'kept', algorithm);
      expect(kept.some((value) => value !== null)).toBe(true);
      for (const now of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        for (const key of ['kept', 'fresh']) {
          const calls: Promise<unknown>[] = [decide(key, now), store.peek(key, algorithm, 1, now)];
          if (!leases)
            calls.push(
              store.giveBack({ key, algorithm, cost: 1 }, now),
              store.charge({ key, algorithm, cost: 2 }, now),
            );
          for (const call of calls) {
            await expect(call, `now ${now}, key ${key}`).rejects.toMatchObject({
              code: 'RL_STORE_ERROR',
              message: expect.stringMatching(/now is not a finite number/),
            });
          }
        }
      }
      expect(await stateOf(store, 'kept', algorithm)).toEqual(kept);
      expect((await stateOf(store, 'fresh', algorithm)).every((value) => value === null)).toBe(true);
      // The state is intact: the same decisions as if no bad call had been made.
      expect((await decide('kept', 1_001)).remaining).toBe(1);
    },
  );
});
