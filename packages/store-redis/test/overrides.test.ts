/**
 * Overrides on Redis with the defaults users get (the deny cache on, batching on): two instances, each
 * with its own client and store (as two processes have), on standalone Redis and a Cluster; and 10,000
 * overrides: one script call per decision, Redis's script cache and the store's scripts unchanged,
 * the process's heap bounded.
 */
import { Redis } from 'ioredis';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Limiter } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { heard } from './support/reset-heard.js';

const deployments = useRedisDeployments('overrides');

/** A full collection, for a count of the heap the process keeps (V8's `gc`, exposed for this file). */
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/** Script calls Redis has run (EVALSHA and EVAL), on every master of the deployment. */
async function scriptCalls(admins: readonly Redis[]): Promise<number> {
  let total = 0;
  for (const admin of admins) {
    const stats = await admin.info('commandstats');
    for (const name of ['evalsha', 'eval'])
      total += Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  }
  return total;
}

describe.each(['standalone', 'cluster'] as const)('overrides on %s Redis', (deployment) => {
  it("A sets k to 10 per minute; B's next decision reports q=10 with one script call; A clears it; B's next decision is the default again", async () => {
    const prefix = deployments.freshPrefix();
    const clients = await Promise.all([deployments.ownClient(deployment), deployments.ownClient(deployment)]);
    const admins =
      deployment === 'standalone'
        ? [new Redis(deployments.url)]
        : deployments.nodes.map((node) => new Redis(node.port, node.host));
    const stores = clients.map((client) => new RedisStore({ client, prefix }));
    // What is counted is script calls: a store timeout (50 ms by default) would let a loaded machine
    // turn a control call that waits for the other instance's confirmation into a StoreTimeoutError.
    const [a, b] = stores.map((store) =>
      createLimiter({ algorithm: fixedWindow({ limit: 2, window: '1m' }), store, overrides: true, timeout: '5s' }),
    ) as [Limiter, Limiter];
    try {
      expect((await b.consume('k')).allowed).toBe(true);
      expect((await b.consume('k')).allowed).toBe(true);
      expect(await b.consume('k')).toMatchObject({ allowed: false, policy: { quota: 2 } });
      const told = heard(stores[1]!, b.storageKey('k'));
      await a.setOverride('k', fixedWindow({ limit: 10, window: '1m' }), { ttl: '1h' });
      // B's deny cache held the denial: the store's message makes it forget it.
      await told;
      const before = await scriptCalls(admins);
      const overridden = await b.consume('k');
      expect(await scriptCalls(admins)).toBe(before + 1);
      expect(overridden).toMatchObject({
        allowed: true,
        limit: 10,
        remaining: 7,
        policy: { name: '10-in-1m', quota: 10, windowSeconds: 60 },
      });
      expect(await b.getOverride('k')).toMatchObject({ algorithm: { kind: 'fixed-window', limit: 10 } });
      await a.clearOverride('k');
      const back = await b.consume('k');
      expect(back).toMatchObject({ allowed: false, limit: 2, policy: { name: '2-in-1m', quota: 2 } });
      expect(await b.getOverride('k')).toBeUndefined();
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      for (const client of clients) client.disconnect();
      admins.forEach((admin) => admin.disconnect());
    }
  });
});

describe('10,000 overrides on standalone Redis', () => {
  it("one script call per decision; Redis's script cache and the store's scripts unchanged; the process's heap bounded", async () => {
    const client = new Redis(deployments.url);
    const admin = new Redis(deployments.url);
    try {
      const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
      // What is counted is calls, scripts and bytes: a store timeout (50 ms by default) would let a loaded
      // machine answer some of the 1,000 decisions in flight by the failure policy, which is not the subject here.
      const limiter = createLimiter({
        algorithm: tokenBucket({ capacity: 10, refillRate: 1 }),
        store,
        overrides: true,
        timeout: '5s',
      });
      expect((await limiter.consume('warm')).allowed).toBe(true);
      const cachedScripts = async () => Number(/number_of_cached_scripts:(\d+)/.exec(await admin.info('memory'))![1]);
      // Define the scripts once (an override's, a decision's alone and in a batch), and warm the process (its code, its client's buffers) with 10,000 overrides.
      const overrideAll = async (from: number, count: number) => {
        for (let i = from; i < from + count; i += 500) {
          await Promise.all(
            Array.from({ length: 500 }, (_, j) =>
              limiter.setOverride(`user-${i + j}`, tokenBucket({ capacity: 10_020 + i + j, refillRate: 1 }), {
                ttl: '1h',
              }),
            ),
          );
        }
      };
      await overrideAll(-10_000, 10_000);
      await Promise.all(Array.from({ length: 10 }, () => limiter.consume('user--1')));
      const scriptsBefore = await cachedScripts();
      const storeScripts = store.scriptCount;
      collect();
      const heapBefore = process.memoryUsage().heapUsed;
      // Every override a configuration of its own (a customer's plan).
      await overrideAll(0, 10_000);
      collect();
      // 10,000 overrides held in Redis, not in the process: what its heap keeps grows by less than 100 bytes per override.
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(1_000_000);
      await admin.config('RESETSTAT');
      const decisions = await Promise.all(Array.from({ length: 1_000 }, (_, i) => limiter.consume(`user-${i * 10}`)));
      decisions.forEach((d, i) =>
        expect(d).toMatchObject({ allowed: true, limit: 10_020 + i * 10, remaining: 10_019 + i * 10 }),
      );
      const stats = await admin.info('commandstats');
      const calls = ['evalsha', 'eval'].reduce(
        (sum, name) => sum + Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0),
        0,
      );
      // Batched: at most one call per decision.
      expect(calls).toBeLessThanOrEqual(1_000);
      expect(await cachedScripts()).toBe(scriptsBefore);
      expect(store.scriptCount).toBe(storeScripts);
    } finally {
      client.disconnect();
      admin.disconnect();
    }
  });
});
