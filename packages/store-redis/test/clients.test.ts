/**
 * What the store does for each client it takes (test/support/clients.ts), on a real standalone Redis
 * and a real 3-master Cluster: it detects the client, reads binary replies, sends a script again
 * after SCRIPT FLUSH (node-redis does not), maps each key to the master of its slot, sends one
 * EVALSHA per decision, says what to fix when the client is closed, and refuses anything else with
 * the list of what it accepts. (The conformance, parity and failure suites run per client too.)
 */
import type { Cluster, Redis } from 'ioredis5';
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concurrency, fixedWindow, slidingWindowLog, tokenBucket, type Algorithm } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { createClient, createClientPool } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { ALL, IOREDIS_6, NODE_REDIS_6, type ClientKind } from './support/clients.js';

const deployments = useRedisDeployments('clients');

/** The masters of the harness cluster, each an ioredis client of the shared harness. */
function nodesOf(client: Redis | Cluster): Redis[] {
  return 'isCluster' in client && client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
}

/** EVALSHA and EVAL calls the servers have run since their stats were reset. */
async function scriptCalls(client: Redis | Cluster): Promise<{ evalsha: number; eval: number }> {
  let evalsha = 0;
  let evals = 0;
  for (const node of nodesOf(client)) {
    const stats = await node.info('commandstats');
    evalsha += Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    evals += Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0);
  }
  return { evalsha, eval: evals };
}

const algorithms: [string, Algorithm][] = [
  ['token bucket (compact layout)', tokenBucket({ capacity: 5, refillRate: 1 })],
  ['sliding window log (keys of its own)', slidingWindowLog({ limit: 5, window: '1m' })],
  ['concurrency', concurrency({ limit: 5, lease: '1h' })],
];

const targets = ALL.flatMap((kind) =>
  (['standalone', 'cluster'] as const).map((deployment) => ({ name: `${kind.name}, ${deployment}`, kind, deployment })),
);

describe.each(targets)('$name', ({ kind, deployment }) => {
  let client: RedisClient;
  const harness = (): Redis | Cluster => (deployment === 'standalone' ? deployments.standalone : deployments.clustered);
  beforeAll(async () => {
    client =
      deployment === 'standalone' ? await kind.standalone(deployments.url) : await kind.cluster(deployments.nodes);
  });
  afterAll(async () => {
    if (client !== undefined) await kind.close(client);
  });

  it.each(algorithms)(
    '%s: a SCRIPT FLUSH between calls is transparent (EVAL on NOSCRIPT, the state kept)',
    async (_name, algorithm) => {
      const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
      const take = (id: string) =>
        algorithm.stateKind === 'leases'
          ? store.acquire('k', algorithm as never, id, 1000)
          : store.charge({ key: 'k', algorithm, cost: 1 }, 1000).then((c) => c.decision);
      const first = await take('a');
      for (const node of nodesOf(harness())) await node.script('FLUSH');
      const second = await take('b');
      const third = await take('c');
      expect([first.allowed, second.allowed, third.allowed]).toEqual([true, true, true]);
      expect([second.remaining, third.remaining]).toEqual([first.remaining - 1, first.remaining - 2]);
    },
  );

  it('reads the binary reply as it is: fractional costs and times give the exact doubles', async () => {
    const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
    const algorithm = tokenBucket({ capacity: 3, refillRate: 1 / 3, interval: 1000 });
    const first = (await store.charge({ key: 'k', algorithm, cost: 1 / 3 }, 1_764_500_000_123.25)).decision;
    const second = (await store.charge({ key: 'k', algorithm, cost: 2.5 }, 1_764_500_000_124.5)).decision;
    expect([first.allowed, first.remaining, second.allowed, second.remaining]).toEqual([true, 2, true, 0]);
    expect(second.at).toBe(1_764_500_000_124.5);
  });

  it(
    deployment === 'standalone'
      ? 'a standalone client is one failure domain (no failureDomain)'
      : kind.family === 'glide'
        ? 'a GLIDE Cluster, which exposes no slot table, is one failure domain (no failureDomain)'
        : "each key's failure domain is the master of its slot",
    () => {
      const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
      if (deployment === 'standalone' || kind.family === 'glide') {
        expect(store.failureDomain).toBeUndefined();
        return;
      }
      // The harness gives each master a range of ceil(16384 / 3) slots, in the order of `nodes`.
      const perNode = Math.ceil(16384 / deployments.nodes.length);
      const seen = new Set<string>();
      for (let i = 0; i < 30; i++) {
        for (const [, algorithm] of algorithms) {
          const key = `key-${i}`;
          const node = deployments.nodes[Math.floor(calculateSlot(store.redisKeys(key, algorithm)[0]!) / perNode)]!;
          expect(store.failureDomain!(key, algorithm)).toBe(`${node.host}:${node.port}`);
          seen.add(store.failureDomain!(key, algorithm));
        }
      }
      expect(seen.size).toBe(3);
    },
  );

  it.each([true, false])(
    "a key of another type is one key's failure (keyOnly), as Redis wrote it (batch: %s)",
    async (batch) => {
      const store = new RedisStore({ client, prefix: deployments.freshPrefix(), batch });
      const algorithm = tokenBucket({ capacity: 5, refillRate: 1 });
      await harness().set(store.redisKeys('k', algorithm)[0]!, 'another program wrote this', 'PX', 60_000);
      const error = await store.charge({ key: 'k', algorithm, cost: 1 }, undefined).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'RL_STORE_ERROR', keyOnly: true });
    },
  );

  it('one decision is one EVALSHA once the scripts are cached (on each node that runs them)', async () => {
    const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
    const algorithm = fixedWindow({ limit: 100, window: '1m' });
    const decide = async () => {
      for (let i = 0; i < 10; i++) await store.charge({ key: `k${i}`, algorithm, cost: 1 }, undefined);
      for (let i = 0; i < 5; i++) await store.peek(`k${i}`, algorithm, 0, undefined);
    };
    await decide(); // caches the scripts on every node the keys live on
    const before = await scriptCalls(harness());
    await decide();
    const after = await scriptCalls(harness());
    expect({ evalsha: after.evalsha - before.evalsha, eval: after.eval - before.eval }).toEqual({
      evalsha: 15,
      eval: 0,
    });
  });
});

describe('closed clients', () => {
  it('a node-redis client never connected: the StoreError says to call connect()', async () => {
    for (const client of [createClient({ url: deployments.url }), createClient4({ url: deployments.url })]) {
      const store = new RedisStore({ client });
      const failure = store.charge(
        { key: 'k', algorithm: tokenBucket({ capacity: 1, refillRate: 1 }), cost: 1 },
        undefined,
      );
      await expect(failure).rejects.toMatchObject({ code: 'RL_STORE_ERROR' });
      await expect(failure).rejects.toThrow(/node-redis client is not open: call `await client\.connect\(\)`/);
    }
  });

  it.each([IOREDIS_6, NODE_REDIS_6] as ClientKind[])(
    '$name, closed by its owner: the StoreError says so, for decisions and resets',
    async (kind) => {
      const client = await kind.standalone(deployments.url);
      const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
      const algorithm = fixedWindow({ limit: 1, window: '1s' });
      expect((await store.charge({ key: 'k', algorithm, cost: 1 }, undefined)).decision.allowed).toBe(true);
      await kind.close(client);
      await expect(store.charge({ key: 'k', algorithm, cost: 1 }, undefined)).rejects.toThrow(
        /(client has ended: closed by quit|client is not open)/,
      );
      await expect(store.reset('k', algorithm)).rejects.toThrow(
        /(client has ended: closed by quit|client is not open)/,
      );
    },
  );
});

describe('clients the store cannot use', () => {
  it.each([
    ['a URL', 'redis://127.0.0.1:6379'],
    ['an empty object', {}],
    ['a client factory, not a client', { createClient }],
    ['a promise of a client', Promise.resolve(null)],
    ['null', null],
  ])('%s: InvalidOptionError naming every client it takes', (_name, client) => {
    const error = (() => {
      try {
        new RedisStore({ client: client as never });
      } catch (thrown) {
        return thrown as { code: string; field: string; message: string };
      }
      return undefined;
    })();
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'RedisStore.client' });
    expect(error!.message).toMatch(/ioredis 5 or 6 or iovalkey .* node-redis 4 or later/);
  });
});

describe('node-redis with RESP3', () => {
  it('decisions are the same: the reply is still a blob string, read as a Buffer', async () => {
    const client = createClient({ url: deployments.url, RESP: 3 });
    await client.connect();
    try {
      const store = new RedisStore({ client });
      const algorithm = tokenBucket({ capacity: 3, refillRate: 1 / 3, interval: 1000 });
      const decision = (await store.charge({ key: 'k', algorithm, cost: 1 / 3 }, 1_764_500_000_123.25)).decision;
      expect([decision.allowed, decision.remaining, decision.at]).toEqual([true, 2, 1_764_500_000_123.25]);
    } finally {
      client.destroy();
    }
  });
});

describe('node-redis client pool (createClientPool)', () => {
  it('decides, recovers from SCRIPT FLUSH and resets, as one failure domain', async () => {
    const pool = createClientPool({ url: deployments.url });
    await pool.connect();
    try {
      const store = new RedisStore({ client: pool, prefix: deployments.freshPrefix() });
      expect(store.failureDomain).toBeUndefined();
      const algorithm = tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' });
      expect((await store.charge({ key: 'k', algorithm, cost: 1 }, 1000)).decision.remaining).toBe(2);
      await deployments.standalone.script('FLUSH');
      expect((await store.charge({ key: 'k', algorithm, cost: 1 }, 1000)).decision.remaining).toBe(1);
      await store.reset('k', algorithm);
      expect((await store.charge({ key: 'k', algorithm, cost: 1 }, 1000)).decision.remaining).toBe(2);
    } finally {
      pool.destroy();
    }
  });
});
