/**
 * Bans on Redis with the defaults users get (the deny cache on, batching on): three instances, each
 * with its own client, store and subscription (as three processes have), on standalone Redis and a
 * Cluster; and 10,000 bans: one script call per decision, Redis's memory and script cache bounded.
 */
import { Redis, Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Limiter } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { cachedDenial, heard } from './support/reset-heard.js';

const deployments = useRedisDeployments('bans');

/** A client of its own per instance, as each process has, connected (a limiter's first calls then meet no connection time within its timeout). */
async function clientOf(deployment: 'standalone' | 'cluster'): Promise<RedisClient> {
  const client = deployment === 'standalone' ? new Redis(deployments.url) : new Cluster([...deployments.nodes]);
  await client.ping();
  return client;
}
const close = (client: RedisClient) => (client as Redis).disconnect();

describe.each(['standalone', 'cluster'] as const)('bans on %s Redis', (deployment) => {
  it('three instances with deny caches on: a ban on A is denied at once by B and C; after the unban on A, their next requests are admitted (0 stale decisions)', async () => {
    const prefix = deployments.freshPrefix();
    const clients = await Promise.all([clientOf(deployment), clientOf(deployment), clientOf(deployment)]);
    const stores = clients.map((client) => new RedisStore({ client, prefix }));
    const [a, b, c] = stores.map((store) => createLimiter({ algorithm: fixedWindow({ limit: 100, window: '1h' }), store, bans: true })) as [Limiter, Limiter, Limiter];
    try {
      for (const limiter of [a, b, c]) expect((await limiter.consume('k')).allowed).toBe(true);
      await a.block('k', '10m', { reason: 'credential stuffing' });
      for (const limiter of [b, c]) {
        const first = await limiter.consume('k');
        expect(first).toMatchObject({ allowed: false, reason: 'blocked' });
        expect(first.retryAfterMs).toBeGreaterThan(599_000);
        // The deny cache answers the next ones without Redis (once its store hears notices).
        expect(await cachedDenial(limiter, 'k')).toMatchObject({ allowed: false, reason: 'deny-cache' });
      }
      const waits = [heard(stores[1]!, b.storageKey('k')), heard(stores[2]!, c.storageKey('k'))];
      await a.unblock('k');
      await Promise.all(waits);
      expect(await b.consume('k')).toMatchObject({ allowed: true, remaining: 96 });
      expect(await c.consume('k')).toMatchObject({ allowed: true, remaining: 95 });
      // Another key was never banned.
      expect((await b.consume('other')).allowed).toBe(true);
      // A ban shortened (or one that replaces a lockout) reaches the deny caches too.
      await a.block('k', '1h');
      for (const limiter of [b, c]) expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'blocked' });
      const shortened = [heard(stores[1]!, b.storageKey('k')), heard(stores[2]!, c.storageKey('k'))];
      await a.block('k', 1);
      await Promise.all(shortened);
      await new Promise((resolve) => setTimeout(resolve, 5));
      for (const limiter of [b, c]) expect((await limiter.consume('k')).allowed).toBe(true);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      clients.forEach(close);
    }
  });
});

describe('10,000 bans on standalone Redis', () => {
  it('one script call per decision; no script per ban; Redis keeps about 1 KB per ban (one block per rate layout)', async () => {
    const client = new Redis(deployments.url);
    const admin = new Redis(deployments.url);
    try {
      const store = new RedisStore({ client, prefix: deployments.freshPrefix(), batch: false });
      const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 10, refillRate: 1 }), store, bans: true, denyCache: false, timeout: false });
      expect((await limiter.consume('warm')).allowed).toBe(true);
      const memoryBefore = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
      for (let i = 0; i < 10_000; i += 500) await Promise.all(Array.from({ length: 500 }, (_, j) => limiter.block(`user-${i + j}`, '1h')));
      const memoryAfter = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
      // A block in each of the six rate layouts (a hash field each; a key of its own for the sliding log).
      expect((memoryAfter - memoryBefore) / 10_000).toBeLessThan(1_200);
      const scripts = store.scriptCount;
      await admin.config('RESETSTAT');
      const decisions = await Promise.all(Array.from({ length: 1_000 }, (_, i) => limiter.consume(`user-${i * 10}`)));
      expect(decisions.every((d) => d.reason === 'blocked')).toBe(true);
      const free = await Promise.all(Array.from({ length: 1_000 }, (_, i) => limiter.consume(`free-${i}`)));
      expect(free.every((d) => d.allowed)).toBe(true);
      const calls = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
      expect(calls).toBe(2_000);
      expect(store.scriptCount).toBe(scripts);
    } finally {
      client.disconnect();
      admin.disconnect();
    }
  });
});
