/**
 * Lockouts (`blockDuration`) on Redis: the block lives in Redis, so every instance sharing it sees it,
 * and the denial that starts it writes it in the same script call (one round trip). The conformance
 * suite runs the lockout tables on standalone and Cluster; here, what needs two store instances or a
 * count of commands.
 */
import { Redis } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow, slidingWindowLog, type Algorithm } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { useRedis } from '@rl/test-support';

const redis = useRedis('lockouts');

/** Calls of each command Redis has run so far (`INFO commandstats`). */
async function commandCalls(client: Redis): Promise<Map<string, number>> {
  const info = await client.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe.each<[string, Algorithm]>([
  ['fixed window (compact layout)', fixedWindow({ limit: 5, window: '15m' })],
  ['sliding window log (keys of their own)', slidingWindowLog({ limit: 5, window: '15m' })],
])('lockouts on Redis: %s', (_name, algorithm) => {
  it('two limiters on two RedisStore instances sharing one Redis see the same block, and a reset lifts it', async () => {
    const prefix = redis.freshPrefix();
    const other = new Redis(redis.url);
    try {
      let now = 1_000_000;
      // A generous timeout: the block is the subject here, not a Redis slowed by a loaded machine (the 50 ms default).
      const options = {
        algorithm,
        clock: () => now,
        blockDuration: '1h' as const,
        denyCache: false,
        timeout: '5s' as const,
      };
      const a = createLimiter({ ...options, store: new RedisStore({ client: redis.client, prefix }) });
      const b = createLimiter({ ...options, store: new RedisStore({ client: other, prefix }) });
      for (let i = 0; i < 5; i++) expect((await a.consume('login')).allowed).toBe(true);
      expect(await a.consume('login')).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 });
      now += 20 * 60_000;
      // Another window, another instance: still blocked, 40 minutes to go.
      expect(await b.consume('login')).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 2_400_000 });
      await b.reset('login');
      expect(await a.consume('login')).toMatchObject({ allowed: true, remaining: 4 });
    } finally {
      other.disconnect();
    }
  });

  it('a reset through a limiter without a lockout lifts the block too (the same state, another configuration)', async () => {
    const prefix = redis.freshPrefix();
    const store = new RedisStore({ client: redis.client, prefix });
    const now = 1_000_000;
    const blocking = createLimiter({ algorithm, store, clock: () => now, blockDuration: '1h', denyCache: false });
    const plain = createLimiter({ algorithm, store, clock: () => now, denyCache: false });
    for (let i = 0; i < 6; i++) await blocking.consume('login');
    expect((await blocking.consume('login')).retryAfterMs).toBe(3_600_000);
    await plain.reset('login');
    expect(await blocking.consume('login')).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('a clock that goes back into a block that has ended finds the key blocked (as the memory store does)', async () => {
    const prefix = redis.freshPrefix();
    let now = 1_000_000;
    const limiter = createLimiter({
      algorithm,
      store: new RedisStore({ client: redis.client, prefix }),
      clock: () => now,
      blockDuration: '1h',
      denyCache: false,
    });
    for (let i = 0; i < 6; i++) await limiter.consume('login');
    now += 3_600_000;
    await limiter.peek('login');
    now -= 1;
    expect(await limiter.consume('login')).toMatchObject({ allowed: false, retryAfterMs: 1 });
  });

  it('the denial that starts a block is one script call; every key it writes expires, the block no sooner than its end', async () => {
    const prefix = redis.freshPrefix();
    const store = new RedisStore({ client: redis.client, prefix });
    const limiter = createLimiter({ algorithm, store, blockDuration: '1h', denyCache: false });
    for (let i = 0; i < 5; i++) await limiter.consume('login');
    const before = await commandCalls(redis.client);
    expect((await limiter.consume('login')).allowed).toBe(false);
    const after = await commandCalls(redis.client);
    // INFO itself runs between the two readings; the denial is one EVALSHA (its commands run inside it).
    const sent = [...after].filter(
      ([name, calls]) =>
        name !== 'info' &&
        calls !== (before.get(name) ?? 0) &&
        ![
          'hget',
          'hset',
          'pttl',
          'pexpire',
          'time',
          'get',
          'set',
          'lrange',
          'rpush',
          'llen',
          'lindex',
          'ltrim',
          'del',
          'hrandfield',
          'hdel',
          'lset',
        ].includes(name),
    );
    expect(sent).toEqual([['evalsha', (before.get('evalsha') ?? 0) + 1]]);
    const ttls = await Promise.all((await redis.client.keys(`${prefix}*`)).map((key) => redis.client.pttl(key)));
    for (const ttl of ttls) expect(ttl).toBeGreaterThan(0);
    // The key that holds the block (the bucket hash, or the `:block` key) lives at least as long as it.
    expect(Math.max(...ttls)).toBeGreaterThanOrEqual(3_600_000 - 1_000);
  });
});
