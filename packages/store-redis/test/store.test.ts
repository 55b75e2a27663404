/**
 * RedisStore behaviour that only a real Redis shows: key layout and hash tags (standalone and
 * Cluster), Redis TIME, expiries, script reloading after SCRIPT FLUSH, one round trip per decision,
 * memory per key, the sliding log's records, typed errors.
 */
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  fixedWindow,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '@rl/core';
import { EXPLICIT_NOW_EXPIRY_MARGIN_MS, RedisStore, hashTagOf } from '@rl/store-redis';
import { useRedisDeployments } from './shared-redis.js';

const deployments = useRedisDeployments('store');
const freshPrefix = (): string => deployments.freshPrefix();

const rateAlgorithms: Algorithm[] = [
  fixedWindow({ limit: 5, window: '1h' }),
  slidingWindowLog({ limit: 5, window: '1h' }),
  slidingWindowCounter({ limit: 5, window: '1h' }),
  tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }),
  leakyBucket({ capacity: 5, leakRate: 1, interval: '1h' }),
  leakyBucket({ capacity: 5, leakRate: 1, interval: '1h', mode: 'shape' }),
];
const nameOf = (a: Algorithm) => `${a.kind}${a.options.mode === 'shape' ? ' (shape)' : ''}`;

/** Every connection of a client: the client itself, or each master of a cluster. */
function nodesOf(client: Redis | Cluster): Redis[] {
  return client instanceof Redis ? [client] : (client as Cluster).nodes('master');
}

const targets = [
  { name: 'standalone', client: (): Redis | Cluster => deployments.standalone },
  { name: 'cluster', client: (): Redis | Cluster => deployments.clustered },
];

describe('options', () => {
  it('rejects a missing client, unknown options and a prefix with braces, with RL_INVALID_OPTION naming the field', () => {
    expect(() => new RedisStore({} as never)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore.client' }));
    expect(() => new RedisStore({ client: deployments.standalone, ttl: 5 } as never)).toThrow(expect.objectContaining({ field: 'RedisStore.ttl' }));
    expect(() => new RedisStore({ client: deployments.standalone, prefix: 'a{b}' })).toThrow(expect.objectContaining({ field: 'RedisStore.prefix' }));
  });

  it('a closed store throws StoreClosedError and leaves the client open', async () => {
    const store = new RedisStore({ client: deployments.standalone, prefix: freshPrefix() });
    store.close();
    expect(() => store.consume('k', rateAlgorithms[0]!, 1, undefined)).toThrow(expect.objectContaining({ code: 'RL_STORE_CLOSED' }));
    expect(await deployments.standalone.ping()).toBe('PONG');
  });
});

describe.each(targets)('RedisStore on $name Redis', ({ name, client }) => {
  describe('keys', () => {
    const awkwardKeys = ['{', '}', '{}', 'a}b{c', '#tag', 'x'.repeat(10_000), '\uD800', '\uD801', '\0bin\u0001', 'ключ🙂', 'user:1'];

    it.each(rateAlgorithms.map((a) => [nameOf(a), a] as const))('%s: awkward keys keep separate state and never raise CROSSSLOT', async (_n, algorithm) => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      for (const key of awkwardKeys) {
        for (let i = 0; i < 5; i++) await store.consume(key, algorithm, 1, 1000);
        // The sixth request of each key is denied: no key shares state with another.
        expect((await store.consume(key, algorithm, 1, 1000)).allowed).toBe(false);
      }
      for (const key of awkwardKeys) expect((await store.consume(`${key}-other`, algorithm, 1, 1000)).allowed).toBe(true);
    });

    it('the Redis keys of one limit share a hash tag (one Cluster slot); long, braced and ill-formed keys are hashed', async () => {
      const store = new RedisStore({ client: client(), prefix: 'rl:' });
      const log = slidingWindowLog({ limit: 5, window: '1s' });
      expect(store.redisKeys('user:1', log)).toEqual(['rl:{user:1}:swl', 'rl:{user:1}:swl:sum']);
      for (const key of awkwardKeys) {
        const keys = store.redisKeys(key, log);
        const tag = hashTagOf(key);
        expect(keys.every((k) => k.startsWith(`rl:{${tag}}:`))).toBe(true);
        expect(tag.includes('{') || tag.includes('}')).toBe(false);
        expect(keys[0]!.length).toBeLessThan(260);
      }
      expect(hashTagOf('\uD800')).not.toBe(hashTagOf('\uD801'));
      expect(hashTagOf('#tag')).not.toBe('#tag');
      if (name === 'cluster') {
        const node = nodesOf(client())[0]!;
        for (const key of awkwardKeys) {
          const [list, sum] = store.redisKeys(key, log);
          expect(await node.cluster('KEYSLOT', list!)).toBe(await node.cluster('KEYSLOT', sum!));
        }
      }
    });
  });

  describe('time and expiry', () => {
    it.each(rateAlgorithms.map((a) => [nameOf(a), a] as const))('%s: with Redis TIME every key expires no sooner than the state recovers', async (_n, algorithm) => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const decision = await store.consume('k', algorithm, 2, undefined);
      for (const key of store.redisKeys('k', algorithm)) {
        const pttl = await client().pttl(key);
        // resetMs is the time until the state is the same as no state; the key may not expire before.
        expect(pttl, key).toBeGreaterThan(decision.resetMs - 1000);
        expect(pttl, key).toBeLessThanOrEqual(decision.resetMs + 1);
      }
    });

    it('with the app clock the expiry gets the documented margin', async () => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const algorithm = tokenBucket({ capacity: 10, refillRate: 1, interval: '1m' });
      const decision = await store.consume('k', algorithm, 3, 5_000);
      const pttl = await client().pttl(store.redisKeys('k', algorithm)[0]!);
      expect(decision.resetMs).toBe(180_000);
      expect(pttl).toBeGreaterThan(180_000);
      expect(pttl).toBeLessThanOrEqual(180_000 + EXPLICIT_NOW_EXPIRY_MARGIN_MS);
    });

    it('concurrency leases expire with their newest lease', async () => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const algorithm = concurrency({ limit: 2, lease: '30s' });
      await store.acquire('k', algorithm, 'a', undefined);
      const pttl = await client().pttl(store.redisKeys('k', algorithm)[0]!);
      expect(pttl).toBeGreaterThan(29_000);
      expect(pttl).toBeLessThanOrEqual(30_000);
    });

    it('uses Redis TIME when no now is given: the stored refill time lies between two TIME readings', async () => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const algorithm = tokenBucket({ capacity: 10, refillRate: 1 });
      const [key] = store.redisKeys('k', algorithm);
      // All nodes run on this machine: any node's TIME is the clock the script read.
      const readTime = async () => {
        const [seconds, micros] = (await nodesOf(client())[0]!.time()).map(Number);
        return seconds! * 1000 + micros! / 1000;
      };
      const before = await readTime();
      await store.consume('k', algorithm, 1, undefined);
      const after = await readTime();
      const raw = await client().getBuffer(key!);
      const last = raw!.readDoubleLE(8);
      expect(last).toBeGreaterThanOrEqual(before);
      expect(last).toBeLessThanOrEqual(after);
    });
  });

  it.each([...rateAlgorithms.map((a) => [nameOf(a), a] as const), ['concurrency', concurrency({ limit: 5, lease: '1h' })] as const])(
    '%s: a SCRIPT FLUSH between calls is transparent (the script is reloaded, the state kept)',
    async (_n, algorithm) => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const take = (id: string) => (algorithm.stateKind === 'leases' ? store.acquire('k', algorithm, id, 1000) : store.consume('k', algorithm, 1, 1000));
      const first = await take('a');
      for (const node of nodesOf(client())) await node.script('FLUSH');
      const second = await take('b');
      expect(first.allowed && second.allowed).toBe(true);
      expect(second.remaining).toBe(first.remaining - 1);
    },
  );

  it('one decision is exactly one EVALSHA round trip (INFO commandstats), for every algorithm', async () => {
    const store = new RedisStore({ client: client(), prefix: freshPrefix() });
    const all: Algorithm[] = [...rateAlgorithms, concurrency({ limit: 50, lease: '1m' })];
    const decide = (algorithm: Algorithm, i: number) =>
      algorithm.stateKind === 'leases' ? store.acquire('k', algorithm, `l${i}`, undefined) : store.consume('k', algorithm, 1, undefined);
    for (const algorithm of all) await decide(algorithm, -1); // scripts loaded
    const nodes = nodesOf(client());
    for (const node of nodes) await node.config('RESETSTAT');
    const perAlgorithm = 10;
    for (const algorithm of all) for (let i = 0; i < perAlgorithm; i++) await decide(algorithm, i);
    let evalsha = 0;
    let evalCalls = 0;
    for (const node of nodes) {
      const stats = await node.info('commandstats');
      evalsha += Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0);
      evalCalls += Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    }
    expect(evalsha).toBe(all.length * perAlgorithm);
    expect(evalCalls).toBe(0);
  });
});

describe('sliding log records', () => {
  it('records with equal times stay distinct, and a cost above 1 counts as its cost', async () => {
    const store = new RedisStore({ client: deployments.standalone, prefix: freshPrefix() });
    const log = slidingWindowLog({ limit: 10, window: '1s' });
    await store.consume('k', log, 1, 500);
    await store.consume('k', log, 1, 500);
    const d = await store.consume('k', log, 3, 500);
    expect(d.remaining).toBe(5);
    expect(await deployments.standalone.llen(store.redisKeys('k', log)[0]!)).toBe(3);
    expect((await store.consume('k', log, 6, 500)).allowed).toBe(false);
    expect((await store.consume('k', log, 5, 500)).remaining).toBe(0);
  });
});

describe('memory per key (MEMORY USAGE)', () => {
  it('one-value algorithms stay within 100 bytes per key, two- and three-value ones within 104', async () => {
    const store = new RedisStore({ client: deployments.standalone, prefix: 'rl:' });
    // A typical key: the limiter's prefix and a user id ('rl:{api:user:12345}:tb', 23 bytes).
    const key = 'api:user:12345';
    const bytes: Record<string, number> = {};
    for (const algorithm of [...rateAlgorithms, slidingWindowLog({ limit: 100, window: '1m' })]) {
      await store.reset(key, algorithm);
      const d = await store.consume(key, algorithm, 1, undefined);
      expect(d.allowed).toBe(true);
      let total = 0;
      for (const redisKey of store.redisKeys(key, algorithm)) total += (await deployments.standalone.memory('USAGE', redisKey)) as number;
      bytes[`${nameOf(algorithm)} limit ${algorithm.limit}`] = total;
    }
    // One double of state (GCRA): within the 100-byte target.
    expect(bytes['leaky-bucket limit 5']).toBeLessThanOrEqual(100);
    expect(bytes['leaky-bucket (shape) limit 5']).toBeLessThanOrEqual(100);
    // Two or three doubles (the TS steps' state, kept exactly for parity): one size class more.
    expect(bytes['token-bucket limit 5']).toBeLessThanOrEqual(104);
    expect(bytes['fixed-window limit 5']).toBeLessThanOrEqual(104);
    expect(bytes['sliding-window-counter limit 5']).toBeLessThanOrEqual(104);
    console.info('MEMORY USAGE bytes per limit (key "rl:{api:user:12345}:<tag>", after one decision):', bytes);
  });
});

describe('errors', () => {
  it('a Redis error rejects with a StoreError (RL_STORE_ERROR) that carries the cause', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ client: deployments.standalone, prefix });
    const algorithm = tokenBucket({ capacity: 5, refillRate: 1 });
    await deployments.standalone.rpush(store.redisKeys('k', algorithm)[0]!, 'not a bucket');
    await deployments.standalone.pexpire(store.redisKeys('k', algorithm)[0]!, 60_000);
    const error = await store.consume('k', algorithm, 1, undefined).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'RL_STORE_ERROR', name: 'StoreError' });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect(String((error as Error).message)).toMatch(/WRONGTYPE/);
  });
});
