/**
 * Batching (RedisStore `batch`): what the parity tests do not show. The option's values, the number of
 * script calls a turn makes (`maxSize`, `batch: false`), every client of the matrix batching, and
 * ioredis with `enableAutoPipelining` (which pipelines the store's commands with its own).
 */
import { Cluster, Redis } from 'ioredis';
import type { Redis as HarnessRedis } from 'ioredis5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, tokenBucket, type Decision } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { ALL } from './support/clients.js';

const deployments = useRedisDeployments('batching');

/** Script calls Redis has run (`EVALSHA` and `EVAL`), over the given nodes. */
async function scriptCalls(nodes: readonly HarnessRedis[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) {
    const info = await node.info('commandstats');
    calls +=
      Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0) +
      Number(/^cmdstat_eval:calls=(\d+)/m.exec(info)?.[1] ?? 0);
  }
  return calls;
}

const plain = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  resetMs: d.resetMs,
  retryAfterMs: d.retryAfterMs,
});
const algorithm = tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' });
/** 24 consumes in one turn, over six keys: four each, so the fourth of each key is denied. */
const turn = Array.from({ length: 24 }, (_, i) => `k${i % 6}`);

/** The decisions of `turn` issued in one turn on `store`, at a fixed `now`, after loading the scripts. */
async function decideTurn(store: RedisStore | MemoryStore): Promise<Decision[]> {
  const limiter = createLimiter({ algorithm, store, clock: () => 1_000_000, timeout: false, denyCache: false });
  await Promise.all([limiter.consume('warm'), limiter.consume('warm')]);
  return Promise.all(turn.map((key) => limiter.consume(key)));
}

describe('the batch option', () => {
  it('takes true, false or { maxSize } from 2 to 1000; anything else is an InvalidOptionError naming the field', () => {
    const client = deployments.standalone;
    for (const batch of [true, false, {}, { maxSize: 2 }, { maxSize: 1000 }, undefined])
      expect(() => new RedisStore({ client, batch })).not.toThrow();
    for (const [batch, field] of [
      [null, 'RedisStore.batch'],
      ['yes', 'RedisStore.batch'],
      [{ maxSize: 1 }, 'RedisStore.batch.maxSize'],
      [{ maxSize: 1001 }, 'RedisStore.batch.maxSize'],
      [{ maxSize: 2.5 }, 'RedisStore.batch.maxSize'],
      [{ size: 4 }, 'RedisStore.batch.size'],
    ] as const) {
      expect(() => new RedisStore({ client, batch: batch as never }), JSON.stringify(batch)).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field }),
      );
    }
  });
});

describe('script calls per turn (standalone)', () => {
  it.each([
    // The first alone, then the other 23 in batches of 16 at most: 1 + 2.
    [undefined, 3],
    // 1 + ceil(23 / 4).
    [{ maxSize: 4 }, 7],
    [false, 24],
  ] as const)(
    'batch %j: 24 decisions of one turn are %i script calls, each decision the memory store’s',
    async (batch, calls) => {
      const store = new RedisStore({ client: deployments.standalone, prefix: deployments.freshPrefix(), batch });
      const expected = (await decideTurn(new MemoryStore({ sweepInterval: false }))).map(plain);
      const limiter = createLimiter({ algorithm, store, clock: () => 1_000_000, timeout: false, denyCache: false });
      await Promise.all([limiter.consume('warm'), limiter.consume('warm')]);
      const before = await scriptCalls([deployments.standalone]);
      const actual = await Promise.all(turn.map((key) => limiter.consume(key)));
      expect(await scriptCalls([deployments.standalone])).toBe(before + calls);
      expect(actual.map(plain)).toEqual(expected);
    },
  );
});

describe.each(ALL)('every client batches ($name)', (kind) => {
  for (const deployment of ['standalone', 'cluster'] as const) {
    let client: RedisClient;
    beforeAll(async () => {
      client =
        deployment === 'standalone' ? await kind.standalone(deployments.url) : await kind.cluster(deployments.nodes);
    });
    afterAll(async () => {
      await kind.close(client);
    });
    it(`${deployment}: a turn's decisions are each the memory store's, in fewer script calls than decisions on standalone`, async () => {
      const nodes = deployment === 'standalone' ? [deployments.standalone] : deployments.clustered.nodes('master');
      const expected = (await decideTurn(new MemoryStore({ sweepInterval: false }))).map(plain);
      const before = await scriptCalls(nodes);
      const actual = await decideTurn(new RedisStore({ client, prefix: deployments.freshPrefix() }));
      expect(actual.map(plain)).toEqual(expected);
      // A Cluster batches per Redis key (six keys, six buckets): each key's four share calls.
      if (deployment === 'standalone') expect((await scriptCalls(nodes)) - before).toBeLessThan(turn.length);
    });
  }
});

describe('ioredis with enableAutoPipelining', () => {
  it.each(['standalone', 'cluster'] as const)(
    '%s: batches are pipelined with the client’s other commands, each decision the memory store’s',
    async (deployment) => {
      const client =
        deployment === 'standalone'
          ? new Redis(deployments.url, { enableAutoPipelining: true })
          : new Cluster(
              deployments.nodes.map((n) => ({ host: n.host, port: n.port })),
              { enableAutoPipelining: true },
            );
      try {
        const expected = (await decideTurn(new MemoryStore({ sweepInterval: false }))).map(plain);
        const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
        const [actual] = await Promise.all([decideTurn(store), client.ping()]);
        expect(actual.map(plain)).toEqual(expected);
      } finally {
        client.disconnect();
      }
    },
  );
});
