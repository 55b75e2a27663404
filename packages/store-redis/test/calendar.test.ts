/**
 * Calendar windows on Redis's clock: the store sends the boundaries of the periods around this
 * process's clock with each call, and the script decides on Redis TIME among them. Standalone and
 * Cluster, batching on (the default) and off; a Redis clock more than a period away fails the call.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { calendarWindow, createLimiter } from '@rl/core';
import { StoreError } from '@rl/core/store';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';

const deployments = useRedisDeployments('calendar');
const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each([
  ['standalone', () => deployments.standalone as RedisClient],
  ['cluster', () => deployments.clustered as RedisClient],
])('calendar windows on %s Redis', (_name, client) => {
  it.each([true, false])(
    'on Redis TIME (batch %s): the hour ends at the next local hour boundary, and the decision reports its length',
    async (batch) => {
      const store = new RedisStore({ client: client(), prefix: deployments.freshPrefix(), batch });
      const algorithm = calendarWindow({ limit: 2, period: 'hour', timeZone: 'America/St_Johns' });
      const before = Date.now();
      const decisions = (
        await Promise.all([1, 2, 3].map(() => store.charge({ key: 'k', algorithm, cost: 1 }, undefined)))
      ).map((c) => c.decision);
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
      // St_Johns' hours start at half past a UTC hour.
      const end = Math.floor((before + HOUR / 2) / HOUR) * HOUR + HOUR / 2;
      const denied = decisions[2]!;
      expect(Math.abs(denied.at + denied.retryAfterMs - end)).toBeLessThan(2_000);
      expect(denied.policy).toEqual({ name: '2-per-hour', quota: 2, windowSeconds: 3600 });
    },
  );

  it('a Redis clock more than a period away from this process fails the call with a StoreError, and writes nothing', async () => {
    const store = new RedisStore({ client: client(), prefix: deployments.freshPrefix(), batch: false });
    const algorithm = calendarWindow({ limit: 2, period: 'hour' });
    const real = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(real + 3 * HOUR);
    await expect(store.charge({ key: 'k', algorithm, cost: 1 }, undefined)).rejects.toBeInstanceOf(StoreError);
    vi.restoreAllMocks();
    expect((await store.peek('k', algorithm, 0, undefined)).remaining).toBe(2);
  });

  it('a limiter with the defaults (deny cache on, batching on): a denial until the period ends', async () => {
    const store = new RedisStore({ client: client(), prefix: deployments.freshPrefix() });
    const limiter = createLimiter({
      algorithm: calendarWindow({ limit: 1, period: 'day', timeZone: 'Europe/Paris' }),
      store,
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    const denied = await limiter.consume('k');
    expect(denied.allowed).toBe(false);
    // The retry is at the next local midnight in Paris (to the second: the decision rounds up to the ms).
    expect(denied.retryAfterMs).toBeLessThanOrEqual(25 * HOUR);
    const retryAt = new Date(Math.floor((denied.at + denied.retryAfterMs) / 1000) * 1000);
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', timeStyle: 'medium' }).format(retryAt)).toBe(
      '00:00:00',
    );
    await limiter.close();
  });

  it('1,000 calendar configurations (per-customer quotas) add no script: they are sent by argument', async () => {
    const store = new RedisStore({ client: client(), prefix: deployments.freshPrefix(), batch: false });
    await store.charge({ key: 'k', algorithm: calendarWindow({ limit: 1, period: 'month' }), cost: 1 }, undefined);
    const scripts = store.scriptCount;
    for (let limit = 2; limit <= 1_000; limit++)
      await store.charge(
        {
          key: `k${limit}`,
          algorithm: calendarWindow({ limit, period: 'month', timeZone: limit % 2 ? 'Asia/Tokyo' : 'UTC' }),
          cost: 1,
        },
        undefined,
      );
    expect(store.scriptCount).toBe(scripts);
  });
});
