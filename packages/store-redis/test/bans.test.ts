/**
 * Bans on Redis with the defaults users get (the deny cache on, batching on): three instances, each
 * with its own client, store and subscription (as three processes have), on standalone Redis and a
 * Cluster; and 10,000 bans: one script call per decision, Redis's memory and script cache bounded.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Limiter } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { cachedDenial, heard } from './support/reset-heard.js';

const deployments = useRedisDeployments('bans');
/** The start of an hour: the hourly window holds every request of a test. */
const T0 = 1_800_000_000_000;

describe.each(['standalone', 'cluster'] as const)('bans on %s Redis', (deployment) => {
  it('three instances with deny caches on: a ban on A is denied at once by B and C; after the unban on A, their next requests are admitted (0 stale decisions)', async () => {
    const prefix = deployments.freshPrefix();
    const clients = await Promise.all([
      deployments.ownClient(deployment),
      deployments.ownClient(deployment),
      deployments.ownClient(deployment),
    ]);
    const stores = clients.map((client) => new RedisStore({ client, prefix }));
    // One clock for the three instances, moved by the test: a ban ends when it says, without a wait.
    let now = T0;
    const [a, b, c] = stores.map((store) =>
      createLimiter({ algorithm: fixedWindow({ limit: 100, window: '1h' }), store, bans: true, clock: () => now }),
    ) as [Limiter, Limiter, Limiter];
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
      for (const limiter of [b, c])
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'blocked' });
      const shortened = [heard(stores[1]!, b.storageKey('k')), heard(stores[2]!, c.storageKey('k'))];
      await a.block('k', 1);
      await Promise.all(shortened);
      // The 1 ms ban has ended.
      now += 5;
      for (const limiter of [b, c]) expect((await limiter.consume('k')).allowed).toBe(true);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      for (const client of clients) client.disconnect();
    }
  });
});

describe('10,000 bans on standalone Redis', () => {
  it('one script call per decision; no script per ban; Redis keeps about 1 KB per ban (one block per rate layout)', async () => {
    const client = new Redis(deployments.url);
    const admin = new Redis(deployments.url);
    try {
      const store = new RedisStore({ client, prefix: deployments.freshPrefix(), batch: false });
      const limiter = createLimiter({
        algorithm: tokenBucket({ capacity: 10, refillRate: 1 }),
        store,
        bans: true,
        denyCache: false,
        timeout: false,
      });
      expect((await limiter.consume('warm')).allowed).toBe(true);
      const memoryBefore = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
      for (let i = 0; i < 10_000; i += 500)
        await Promise.all(Array.from({ length: 500 }, (_, j) => limiter.block(`user-${i + j}`, '1h')));
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
