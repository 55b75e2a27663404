/**
 * A reset on one instance reaches every other instance's deny cache (issue 25): the store publishes the
 * storage key on its prefix's channel, and the stores that have cached a denial listen there. With the
 * default deny cache (on for this store) and a lockout of an hour, the other instance would otherwise
 * keep denying the key from its cache for the whole block. On standalone Redis and a Cluster, with
 * each family's current client; Sentinel is in sentinel.test.ts.
 *
 * The waits for Redis's pub/sub (a subscription coming up, a message arriving) are real time, bounded
 * and polled; the limiters' clock is explicit, so a cached denial never expires during a test.
 */
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import calculateSlot from 'cluster-key-slot';
import { createLimiter, fixedWindow, ResetUnconfirmedError, type Decision, type Limiter } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { sleep, useRedisDeployments } from '@rl/test-support';
import { FULL, GLIDE } from './support/clients.js';
import { cachedDenial } from './support/reset-heard.js';

const redis = useRedisDeployments('resets');
let prefixes = 0;
const T = 1_800_000_000_000;

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

type Deployment = 'standalone' | 'cluster';

/**
 * How many connections listen on the notices of `prefix`'s stores, over every node of the deployment
 * (`PUBSUB NUMSUB`; on a Cluster, sharded: `PUBSUB SHARDNUMSUB`).
 */
async function listeners(deployment: Deployment, prefix: string): Promise<number> {
  const channel = `{${prefix}resets}`;
  const nodes = deployment === 'standalone' ? [redis.standalone] : redis.clustered.nodes('all');
  const command = deployment === 'standalone' ? 'NUMSUB' : 'SHARDNUMSUB';
  const counts = await Promise.all(
    nodes.map(async (node) => Number(((await node.call('PUBSUB', command, channel)) as [string, number])[1])),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** `listeners(…)` once it is `expected`, or what it is after about two seconds. */
async function settles(deployment: Deployment, prefix: string, expected: number): Promise<number> {
  let count = await listeners(deployment, prefix);
  for (let i = 0; i < 200 && count !== expected; i++) {
    await sleep(10);
    count = await listeners(deployment, prefix);
  }
  return count;
}

/** Consumes `key` until the answer is no longer a cached denial (at most about 2 s), and how long that took. */
async function untilForgotten(limiter: Limiter, key: string): Promise<{ ms: number; decision: Decision }> {
  const started = performance.now();
  let decision = await limiter.consume(key);
  for (let i = 0; i < 200 && decision.reason === 'deny-cache'; i++) {
    await sleep(10);
    decision = await limiter.consume(key);
  }
  return { ms: performance.now() - started, decision };
}

describe.each([...FULL, GLIDE])('$name', (kind) => {
  describe.each(['standalone', 'cluster'] as const)('%s', (deployment) => {
    const connect = async (): Promise<RedisClient> => {
      const client = deployment === 'standalone' ? await kind.standalone(redis.url) : await kind.cluster(redis.nodes);
      opened.push(() => kind.close(client));
      return client;
    };
    const storeOn = (client: RedisClient, prefix: string): RedisStore => {
      const store = new RedisStore({ client, prefix });
      opened.push(() => store.close());
      return store;
    };

    it("a reset on instance A (a lifted lockout) reaches instance B's deny cache: B admits the key again", async () => {
      const prefix = `resets${prefixes++}:`;
      let now = T;
      const options = {
        algorithm: fixedWindow({ limit: 2, window: '15m' }),
        clock: () => now,
        blockDuration: '1h' as const,
        prefix: 'login',
      };
      const limiterA = createLimiter({ ...options, store: storeOn(await connect(), prefix) });
      const limiterB = createLimiter({ ...options, store: storeOn(await connect(), prefix) });
      for (let i = 0; i < 2; i++) expect((await limiterA.consume('ann')).allowed).toBe(true);
      expect(await limiterA.consume('ann')).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 });
      // B meets the block in Redis and caches it; each store subscribes with its limiter's first cached denial.
      const fromRedis = await limiterB.consume('ann');
      expect([fromRedis.allowed, fromRedis.reason]).toEqual([false, undefined]);
      expect(await settles(deployment, prefix, 2)).toBe(2);
      expect((await cachedDenial(limiterB, 'ann')).reason).toBe('deny-cache');
      now += 60_000;
      await limiterA.reset('ann');
      const { ms, decision } = await untilForgotten(limiterB, 'ann');
      expect([decision.allowed, decision.reason]).toEqual([true, undefined]);
      expect(ms).toBeLessThan(2_000);
    });

    it('a reset while B is still subscribing is not lost: the new subscription forgets what B cached before it', async () => {
      const prefix = `resets${prefixes++}:`;
      const options = {
        algorithm: fixedWindow({ limit: 1, window: '15m' }),
        clock: () => T,
        blockDuration: '1h' as const,
      };
      const limiterA = createLimiter({ ...options, store: storeOn(await connect(), prefix) });
      const limiterB = createLimiter({ ...options, store: storeOn(await connect(), prefix) });
      await limiterA.consume('ann');
      await limiterA.consume('ann');
      await limiterB.consume('ann'); // cached: B's store starts subscribing
      await limiterA.reset('ann'); // published before B listens, most likely
      const { decision } = await untilForgotten(limiterB, 'ann');
      expect([decision.allowed, decision.reason]).toEqual([true, undefined]);
    });
  });
});

// Not on GLIDE: it tells no break of its subscriber, and drops a closed one's connection seconds later
// (docs/design/stores.md, "Valkey GLIDE").
describe.each(FULL)('$name, standalone: the subscription', (kind) => {
  const connect = async (): Promise<RedisClient> => {
    const client = await kind.standalone(redis.url);
    opened.push(() => kind.close(client));
    return client;
  };

  it('opens with the first cached denial, one connection per store, and close() closes it', async () => {
    const prefix = `resets${prefixes++}:`;
    const store = new RedisStore({ client: await connect(), prefix });
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 1, window: '15m' }), store, clock: () => T });
    await limiter.consume('k');
    expect(await listeners('standalone', prefix)).toBe(0);
    await limiter.consume('k'); // denied and cached: the store subscribes
    await limiter.consume('k2');
    await limiter.consume('k2');
    expect(await settles('standalone', prefix, 1)).toBe(1);
    await store.close();
    expect(await settles('standalone', prefix, 0)).toBe(0);
  });

  it('a break in the subscription forgets every cached denial: a reset sent while it was down is not heard', async () => {
    const prefix = `resets${prefixes++}:`;
    const store = new RedisStore({ client: await connect(), prefix });
    opened.push(() => store.close());
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 1, window: '15m' }),
      store,
      clock: () => T,
      blockDuration: '1h',
    });
    await limiter.consume('ann');
    await limiter.consume('ann');
    expect(await settles('standalone', prefix, 1)).toBe(1);
    expect((await cachedDenial(limiter, 'ann')).reason).toBe('deny-cache');
    // The key's state goes from Redis without a broadcast (what a reset whose message was lost leaves).
    const keys = (await redis.standalone.keys(`${prefix}*`)).filter((key) => !key.endsWith('resets'));
    expect(keys.length).toBeGreaterThan(0);
    await redis.standalone.del(...keys);
    expect((await limiter.consume('ann')).reason).toBe('deny-cache');
    await redis.standalone.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const { decision } = await untilForgotten(limiter, 'ann');
    expect([decision.allowed, decision.reason]).toEqual([true, undefined]);
  });
});

describe("ioredis with a keyPrefix (the client's prefix goes before the notice channels too)", () => {
  it.each([
    ['standalone', 'kp:'],
    ['cluster', '{app}:'],
  ] as const)('%s, keyPrefix %s: a reset on A, confirmed, frees the key on B', async (deployment, keyPrefix) => {
    const make = () =>
      deployment === 'standalone'
        ? new Redis(redis.url, { keyPrefix })
        : new Cluster([...redis.nodes], { keyPrefix, redisOptions: { keyPrefix } });
    const prefix = `resets${prefixes++}:`;
    const options = {
      algorithm: fixedWindow({ limit: 1, window: '1h' }),
      clock: () => T,
      timeout: false,
      prefix: 'p',
    } as const;
    const [clientA, clientB] = [make(), make()];
    opened.push(
      async () => clientA.disconnect(),
      async () => clientB.disconnect(),
    );
    const storeA = new RedisStore({ client: clientA, prefix, confirmTimeout: 2_000 });
    const storeB = new RedisStore({ client: clientB, prefix, confirmTimeout: 2_000 });
    opened.push(
      () => storeA.close(),
      () => storeB.close(),
    );
    const [limiterA, limiterB] = [
      createLimiter({ ...options, store: storeA }),
      createLimiter({ ...options, store: storeB }),
    ];
    await limiterA.consume('ann');
    expect((await cachedDenial(limiterB, 'ann')).reason).toBe('deny-cache');
    await limiterA.reset('ann');
    const after = await limiterB.consume('ann');
    expect([after.allowed, after.reason]).toEqual([true, undefined]);
  });
});

describe.each([...FULL, GLIDE])('$name: a receiver that never confirms', (kind) => {
  it.each(['standalone', 'cluster'] as const)(
    '%s: the call rejects with ResetUnconfirmedError after confirmTimeout, the change applied',
    async (deployment) => {
      const prefix = `resets${prefixes++}:`;
      const client = deployment === 'standalone' ? await kind.standalone(redis.url) : await kind.cluster(redis.nodes);
      opened.push(() => kind.close(client));
      const store = new RedisStore({ client, prefix, confirmTimeout: 50 });
      opened.push(() => store.close());
      // A connection subscribed to the notices that is not a store (a redis-cli SUBSCRIBE): Redis counts it, it never confirms.
      const channel = `{${prefix}resets}`;
      // On a Cluster, on the master of the channel's slot, where SPUBLISH runs and counts.
      if (deployment === 'cluster') await redis.clustered.ping();
      const master = deployment === 'cluster' ? redis.clustered.slots[calculateSlot(channel)]![0]! : '';
      const listener = deployment === 'standalone' ? new Redis(redis.url) : new Redis(`redis://${master}`);
      opened.push(async () => listener.disconnect());
      if (deployment === 'standalone') await listener.subscribe(channel);
      else await listener.ssubscribe(channel);
      const limiter = createLimiter({
        algorithm: fixedWindow({ limit: 1, window: '1h' }),
        store,
        clock: () => T,
        timeout: false,
        prefix: 'p',
      });
      await limiter.consume('ann');
      expect((await limiter.consume('ann')).allowed).toBe(false);
      const error = await limiter.reset('ann').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ResetUnconfirmedError);
      expect(error).toMatchObject({ code: 'RL_RESET_UNCONFIRMED', receivers: 2, confirmed: 1, timeoutMs: 50 });
      // Applied all the same: the key starts afresh.
      expect((await limiter.consume('ann')).allowed).toBe(true);
    },
  );
});
