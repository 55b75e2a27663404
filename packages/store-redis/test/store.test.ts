/**
 * RedisStore behaviour that only a real Redis shows: key layout and hash tags (standalone and
 * Cluster), the compact layout (bucket hashes, fields, dead fields removed), Redis TIME, expiries,
 * script reloading after SCRIPT FLUSH, one round trip per decision, memory per key, the sliding log's
 * records, typed errors.
 */
import { Cluster, Redis } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  fixedWindow,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type StoreError,
} from '@rl/core';
import {
  EXPLICIT_NOW_EXPIRY_MARGIN_MS,
  MAX_PLAIN_FIELD_BYTES,
  RedisStore,
  bucketOf,
  fieldOf,
  hashTagOf,
} from '@rl/store-redis';
import { MemoryStore } from '@rl/store-memory';
import { everyRateAlgorithm, useRedisDeployments } from '@rl/test-support';

const deployments = useRedisDeployments('store');
const freshPrefix = (): string => deployments.freshPrefix();

const rateAlgorithms: Algorithm[] = everyRateAlgorithm(5);
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
    expect(() => new RedisStore({} as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore.client' }),
    );
    expect(() => new RedisStore({ client: deployments.standalone, ttl: 5 } as never)).toThrow(
      expect.objectContaining({ field: 'RedisStore.ttl' }),
    );
    expect(() => new RedisStore({ client: deployments.standalone, prefix: 'a{b}' })).toThrow(
      expect.objectContaining({ field: 'RedisStore.prefix' }),
    );
    for (const buckets of [0, 1.5, -1, 2 ** 24 + 1, '8' as never]) {
      expect(() => new RedisStore({ client: deployments.standalone, buckets })).toThrow(
        expect.objectContaining({ field: 'RedisStore.buckets' }),
      );
    }
  });

  it('a closed store throws StoreClosedError and leaves the client open', async () => {
    const store = new RedisStore({ client: deployments.standalone, prefix: freshPrefix() });
    store.close();
    expect(() => store.charge({ key: 'k', algorithm: rateAlgorithms[0]!, cost: 1 }, undefined)).toThrow(
      expect.objectContaining({ code: 'RL_STORE_CLOSED' }),
    );
    expect(await deployments.standalone.ping()).toBe('PONG');
  });
});

describe('compact layout: buckets and fields', () => {
  it('a key is its own field when short and plain; longer, #-led and ill-formed keys become distinct digests', () => {
    expect(fieldOf('10.1.2.3')).toBe('10.1.2.3');
    expect(fieldOf('')).toBe('');
    expect(fieldOf('x'.repeat(MAX_PLAIN_FIELD_BYTES))).toBe('x'.repeat(MAX_PLAIN_FIELD_BYTES));
    expect(fieldOf('ключ🙂:{a}')).toBe('ключ🙂:{a}');
    const hashed = [
      'x'.repeat(MAX_PLAIN_FIELD_BYTES + 1),
      'я'.repeat(33),
      '#tag',
      '\uD800',
      '\uD801',
      'x'.repeat(10_000),
    ];
    for (const key of hashed) {
      expect(fieldOf(key)).toMatch(/^#[\w-]{43}$/);
      expect(Buffer.byteLength(fieldOf(key))).toBeLessThanOrEqual(MAX_PLAIN_FIELD_BYTES);
    }
    expect(new Set(hashed.map(fieldOf)).size).toBe(hashed.length);
  });

  it('buckets spread keys evenly (FNV-1a) and the bucket is stable', () => {
    expect(bucketOf('10.1.2.3', 8192)).toBe(bucketOf('10.1.2.3', 8192));
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 64_000; i++) counts[bucketOf(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 64)]!++;
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(Math.max(...counts)).toBeLessThan(1200);
  });

  it('keys of one bucket keep separate states; the bucket lives until its latest deadline', async () => {
    const client = deployments.standalone;
    const store = new RedisStore({ client, prefix: freshPrefix(), buckets: 1 });
    const short = fixedWindow({ limit: 2, window: '1s' });
    const long = fixedWindow({ limit: 2, window: '1h' });
    await store.charge({ key: 'a', algorithm: long, cost: 2 }, undefined);
    await store.charge({ key: 'b', algorithm: short, cost: 1 }, undefined);
    expect(store.redisKeys('a', long)).toEqual(store.redisKeys('b', short));
    const [bucket] = store.redisKeys('a', long);
    expect(await client.hlen(bucket!)).toBe(2);
    expect((await store.charge({ key: 'a', algorithm: long, cost: 1 }, undefined)).decision.allowed).toBe(false);
    expect((await store.charge({ key: 'b', algorithm: short, cost: 1 }, undefined)).decision.allowed).toBe(true);
    // 'b' wrote last with a 1 s window, yet the bucket stays until the end of 'a''s hour.
    expect(await client.pttl(bucket!)).toBeGreaterThan(1000);
    await store.reset('a', long);
    expect(await client.hexists(bucket!, store.redisField('a', long)!)).toBe(0);
    expect((await store.charge({ key: 'a', algorithm: long, cost: 2 }, undefined)).decision.allowed).toBe(true);
  });

  it('a bucket is named `{#<hex>}`: never the name of a key of the per-key layout, of this version or an earlier one', () => {
    const store = new RedisStore({ client: deployments.standalone, prefix: 'rl:' });
    const window = fixedWindow({ limit: 1, window: '1m' });
    // The earlier layout kept this state under rl:{<key>}:fw; a numeric key must not name a bucket.
    for (const key of ['42', '1964', 'user1964', '3fff', '#42']) {
      const [bucket] = store.redisKeys(key, window);
      expect(bucket).toMatch(/^rl:\{#[0-9a-f]{1,4}\}:fw$/);
      expect(bucket).not.toBe(`rl:{${hashTagOf(key)}}:fw`);
    }
  });

  it("limiters with different clocks share buckets without removing each other's live states", async () => {
    const client = deployments.standalone;
    const prefix = freshPrefix();
    // One bucket: every key of both limiters lands in it.
    const store = new RedisStore({ client, prefix, buckets: 1 });
    const algorithm = fixedWindow({ limit: 3, window: '1h' });
    // An app clock far behind Redis (a fake clock near 0, or performance.now()).
    for (let i = 0; i < 3; i++) await store.charge({ key: 'behind', algorithm, cost: 1 }, 5_000_000);
    expect((await store.peek('behind', algorithm, 1, 5_000_001)).allowed).toBe(false);
    // Redis TIME limiters write 200 new keys into the same bucket; their pruning must spare 'behind'.
    for (let i = 0; i < 200; i++) await store.charge({ key: `now-${i}`, algorithm, cost: 1 }, undefined);
    expect((await store.peek('behind', algorithm, 1, 5_000_002)).allowed).toBe(false);
    // And an app clock far ahead does not remove the live states of Redis TIME limiters.
    for (let i = 0; i < 200; i++) await store.charge({ key: `ahead-${i}`, algorithm, cost: 1 }, 9_000_000_000_000);
    expect((await store.peek('now-7', algorithm, 0, undefined)).remaining).toBe(2);
  });

  it('an app clock that steps back keeps the bucket alive until the state has recovered', async () => {
    const client = deployments.standalone;
    const store = new RedisStore({ client, prefix: freshPrefix() });
    const algorithm = tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' });
    await store.charge({ key: 'k', algorithm, cost: 1 }, 100_000);
    // The clock steps back 60 s: the state now needs 63 s to recover on this clock.
    const decision = (await store.charge({ key: 'k', algorithm, cost: 2 }, 40_000)).decision;
    expect(decision.remaining).toBe(7);
    const pttl = await client.pttl(store.redisKeys('k', algorithm)[0]!);
    expect(pttl).toBeGreaterThanOrEqual(decision.resetMs);
  });

  it('new fields remove dead ones they sample, never live ones: a bucket written without end stays bounded', async () => {
    const client = deployments.standalone;
    const store = new RedisStore({ client, prefix: freshPrefix(), buckets: 1 });
    const quick = tokenBucket({ capacity: 5, refillRate: 5, interval: 50 }); // recovers within 50 ms
    const slow = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }); // needs 5 h
    const [bucket] = store.redisKeys('k', quick);
    for (let i = 0; i < 300; i++) await store.charge({ key: `old${i}`, algorithm: quick, cost: 5 }, undefined);
    for (let i = 0; i < 100; i++) await store.charge({ key: `live${i}`, algorithm: slow, cost: 5 }, undefined);
    expect(await client.hlen(bucket!)).toBe(400);
    // Dead after their kept (twice the 50 ms to recover) and the 1 s slack, on Redis's clock.
    await new Promise((resolve) => setTimeout(resolve, 1300));
    // One new field in four (by the millisecond) samples 12 fields and removes the dead among them.
    for (let i = 0; i < 300; i++) await store.charge({ key: `new${i}`, algorithm: quick, cost: 1 }, undefined);
    expect(await client.hlen(bucket!)).toBeLessThan(300 + 400 - 100);
    for (let i = 0; i < 300; i++) expect(await client.hexists(bucket!, `new${i}`)).toBe(1);
    for (let i = 0; i < 100; i++) expect(await client.hexists(bucket!, `live${i}`)).toBe(1);
    // And the states kept are right: a live key has no token left, an old one (dead or gone) is full again.
    expect((await store.peek('live7', slow, 0, undefined)).remaining).toBe(0);
    expect((await store.peek('old7', quick, 0, undefined)).remaining).toBe(5);
  });
});

describe.each(targets)('RedisStore on $name Redis', ({ name, client }) => {
  describe('keys', () => {
    const awkwardKeys = [
      '{',
      '}',
      '{}',
      'a}b{c',
      '#tag',
      'x'.repeat(10_000),
      '\uD800',
      '\uD801',
      '\0bin\u0001',
      'ключ🙂',
      'user:1',
    ];

    it.each(rateAlgorithms.map((a) => [nameOf(a), a] as const))(
      '%s: awkward keys keep separate state and never raise CROSSSLOT',
      async (_n, algorithm) => {
        const store = new RedisStore({ client: client(), prefix: freshPrefix() });
        for (const key of awkwardKeys) {
          for (let i = 0; i < 5; i++) await store.charge({ key, algorithm, cost: 1 }, 1000);
          // The sixth request of each key is denied: no key shares state with another.
          expect((await store.charge({ key, algorithm, cost: 1 }, 1000)).decision.allowed).toBe(false);
        }
        for (const key of awkwardKeys)
          expect((await store.charge({ key: `${key}-other`, algorithm, cost: 1 }, 1000)).decision.allowed).toBe(true);
      },
    );

    it('the Redis keys of one limit share a hash tag (one Cluster slot); long, braced and ill-formed keys are hashed', async () => {
      const store = new RedisStore({ client: client(), prefix: 'rl:' });
      const log = slidingWindowLog({ limit: 5, window: '1s' });
      expect(store.redisKeys('user:1', log)).toEqual(['rl:{user:1}:swl2', 'rl:{user:1}:swl2:sum']);
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

    it('keys that name a hash tag ({user:42}) keep state apart, every limit of the tag in the slot of its bucket, in both layouts', async () => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const log = slidingWindowLog({ limit: 1, window: '1h' });
      const window = fixedWindow({ limit: 1, window: '1h' });
      const keys = ['minute:{user:42}', 'day:{user:42}', '{user:42}', 'x{user:42}y{z}'];
      for (const key of keys) {
        expect((await store.charge({ key, algorithm: log, cost: 1 }, 1000)).decision.allowed).toBe(true);
        expect((await store.charge({ key, algorithm: window, cost: 1 }, 1000)).decision.allowed).toBe(true);
      }
      // Each key kept its own state: a second request of each is denied.
      for (const key of keys)
        expect((await store.charge({ key, algorithm: log, cost: 1 }, 1000)).decision.allowed).toBe(false);
      // The log's own keys differ per key; the window's state is a field of one bucket hash per tag.
      const logKeys = keys.flatMap((key) => store.redisKeys(key, log));
      expect(new Set(logKeys).size).toBe(logKeys.length);
      expect(new Set(keys.map((key) => store.redisKeys(key, window)[0])).size).toBe(1);
      expect(new Set(keys.map((key) => store.redisField(key, window))).size).toBe(keys.length);
      const names = [...logKeys, store.redisKeys(keys[0]!, window)[0]!];
      const tags = new Set(names.map((n) => /\{([^}]*)\}/.exec(n)![1]));
      expect(tags.size).toBe(1);
      if (name === 'cluster') {
        const node = nodesOf(client())[0]!;
        const slots = await Promise.all(names.map((n) => node.cluster('KEYSLOT', n)));
        expect(new Set(slots).size).toBe(1);
      }
    });
  });

  describe('time and expiry', () => {
    it.each(rateAlgorithms.map((a) => [nameOf(a), a] as const))(
      '%s: with Redis TIME every key expires no sooner than the state recovers',
      async (_n, algorithm) => {
        const store = new RedisStore({ client: client(), prefix: freshPrefix() });
        const decision = (await store.charge({ key: 'k', algorithm, cost: 2 }, undefined)).decision;
        // A bucket hash, when its expiry is extended, gets twice the longest time a state of this
        // configuration can need (its horizon): a window (two for the counter), or the time to fill or
        // empty a bucket.
        const { layout } = algorithm.script;
        const longest =
          !layout.compact || store.redisField('k', algorithm) === undefined
            ? decision.resetMs + 1
            : 2 * Math.ceil(layout.horizonMs);
        const [stateKey, ...metadata] = store.redisKeys('k', algorithm);
        expect(await client().exists(stateKey!)).toBe(1);
        for (const key of [stateKey!, ...metadata]) {
          const pttl = await client().pttl(key);
          // The sliding log's metadata key exists only for a long log (see the next test).
          if (pttl === -2 && key !== stateKey) continue;
          // resetMs is the time until the state is the same as no state; the key may not expire before.
          expect(pttl, key).toBeGreaterThan(decision.resetMs - 50);
          expect(pttl, key).toBeLessThanOrEqual(longest);
        }
      },
    );

    it('with the app clock the expiry gets the documented margin', async () => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const algorithm = tokenBucket({ capacity: 10, refillRate: 1, interval: '1m' });
      const decision = (await store.charge({ key: 'k', algorithm, cost: 3 }, 5_000)).decision;
      const pttl = await client().pttl(store.redisKeys('k', algorithm)[0]!);
      expect(decision.resetMs).toBe(180_000);
      expect(pttl).toBeGreaterThan(180_000 + EXPLICIT_NOW_EXPIRY_MARGIN_MS - 50);
      // Extended to twice the time a full refill takes (10 min) plus the margin.
      expect(pttl).toBeLessThanOrEqual((600_000 + EXPLICIT_NOW_EXPIRY_MARGIN_MS) * 2);
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
      const [bucket] = store.redisKeys('k', algorithm);
      // All nodes run on this machine: any node's TIME is the clock the script read.
      const readTime = async () => {
        const [seconds, micros] = (await nodesOf(client())[0]!.time()).map(Number);
        return seconds! * 1000 + micros! / 1000;
      };
      const before = await readTime();
      await store.charge({ key: 'k', algorithm, cost: 1 }, undefined);
      const after = await readTime();
      // The field holds (deadline, tokens, lastRefillTime).
      const raw = await client().hgetBuffer(bucket!, store.redisField('k', algorithm)!);
      const last = raw!.readDoubleLE(16);
      expect(last).toBeGreaterThanOrEqual(before);
      expect(last).toBeLessThanOrEqual(after);
    });
  });

  it.each([
    ...rateAlgorithms.map((a) => [nameOf(a), a] as const),
    ['concurrency', concurrency({ limit: 5, lease: '1h' })] as const,
  ])(
    '%s: a SCRIPT FLUSH between calls is transparent (the script is reloaded, the state kept)',
    async (_n, algorithm) => {
      const store = new RedisStore({ client: client(), prefix: freshPrefix() });
      const take = (id: string) =>
        algorithm.stateKind === 'leases'
          ? store.acquire('k', algorithm, id, 1000)
          : store.charge({ key: 'k', algorithm, cost: 1 }, 1000).then((c) => c.decision);
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
      algorithm.stateKind === 'leases'
        ? store.acquire('k', algorithm, `l${i}`, undefined)
        : store.charge({ key: 'k', algorithm, cost: 1 }, undefined);
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
    await store.charge({ key: 'k', algorithm: log, cost: 1 }, 500);
    await store.charge({ key: 'k', algorithm: log, cost: 1 }, 500);
    const d = (await store.charge({ key: 'k', algorithm: log, cost: 3 }, 500)).decision;
    expect(d.remaining).toBe(5);
    expect(await deployments.standalone.llen(store.redisKeys('k', log)[0]!)).toBe(3);
    expect((await store.charge({ key: 'k', algorithm: log, cost: 6 }, 500)).decision.allowed).toBe(false);
    expect((await store.charge({ key: 'k', algorithm: log, cost: 5 }, 500)).decision.remaining).toBe(0);
  });

  it('fractional costs give the same floats on both stores: a short log sums its records, oldest first, on each', async () => {
    const store = new RedisStore({ client: deployments.standalone, prefix: freshPrefix() });
    const memory = new MemoryStore({ sweepInterval: false });
    const log = slidingWindowLog({ limit: 1, window: 1000 });
    // A running sum after dropping the record at 0 is 0.7000000000000001; the records add up to 0.7:
    // the last request fits under limit + EPSILON only with the latter.
    for (const [cost, now] of [
      [0.1, 0],
      [0.1, 500],
      [0.6, 600],
      [1, 1000],
      [0.3000000010000002, 1001],
    ] as const) {
      const [fromRedis, fromMemory] = await Promise.all([
        store.charge({ key: 'k', algorithm: log, cost }, now),
        memory.charge({ key: 'k', algorithm: log, cost }, now),
      ]).then(([r, m]) => [r.decision, m.decision] as const);
      expect(fromRedis, `cost ${cost} at ${now}`).toEqual(fromMemory);
    }
  });

  it('the metadata key exists only for a log of 8 records or more, and decisions agree with the memory store as the log grows, shrinks and loses it', async () => {
    const client = deployments.standalone;
    const store = new RedisStore({ client, prefix: freshPrefix() });
    const memory = new MemoryStore({ sweepInterval: false });
    const log = slidingWindowLog({ limit: 20, window: 1000 });
    const [list, sum] = store.redisKeys('k', log);
    const both = async (cost: number, now: number) => {
      const [fromRedis, fromMemory] = await Promise.all([
        store.charge({ key: 'k', algorithm: log, cost }, now),
        memory.charge({ key: 'k', algorithm: log, cost }, now),
      ]).then(([r, m]) => [r.decision, m.decision] as const);
      expect(fromRedis, `cost ${cost} at ${now}`).toEqual(fromMemory);
      return fromRedis;
    };
    for (let i = 0; i < 7; i++) await both(i === 3 ? 2.5 : 1, 100 + i);
    expect(await client.llen(list!)).toBe(7);
    expect(await client.exists(sum!)).toBe(0);
    await both(1, 110);
    // 8 records: the sum is kept, and expires with the log.
    expect(await client.exists(sum!)).toBe(1);
    expect(Math.abs((await client.pttl(sum!)) - (await client.pttl(list!)))).toBeLessThan(50);
    for (let i = 0; i < 6; i++) await both(2, 120 + i);
    // Evicted metadata of a long log is rebuilt from the records.
    await client.del(sum!);
    expect((await both(1, 130)).allowed).toBe(false);
    // Records leave the window: 10 are left, then 5 (the metadata key goes with the long log).
    await both(1, 1103.5);
    expect(await client.llen(list!)).toBe(10);
    expect(await client.exists(sum!)).toBe(1);
    await both(0.5, 1121.5);
    expect(await client.llen(list!)).toBe(5);
    expect(await client.exists(sum!)).toBe(0);
    // Growing past 8 again writes the sum afresh.
    for (let i = 1; i <= 4; i++) await both(1, 1121.5 + i / 10);
    expect(await client.llen(list!)).toBeGreaterThanOrEqual(8);
    await both(3, 1250);
    await both(1, 2121);
    // Undo of a long log whose metadata was lost leaves no key without an expiry.
    await client.del(sum!);
    await Promise.all([
      store.giveBack({ key: 'k', algorithm: log, cost: 1 }, 2121),
      memory.giveBack({ key: 'k', algorithm: log, cost: 1 }, 2121),
    ]);
    expect(await client.pttl(sum!)).not.toBe(-1);
    await both(1, 2122);
  });
});

describe('memory per key (MEMORY USAGE)', () => {
  it('the compact layout takes under 64 bytes per key at the default density; the sliding log a key of its own', async () => {
    const client = deployments.standalone;
    // 32,000 keys in 256 buckets: 125 per bucket, as two million keys in the default 16384 buckets.
    const store = new RedisStore({ client, prefix: freshPrefix(), buckets: 256 });
    const keys = Array.from({ length: 32_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    const bytes: Record<string, number> = {};
    for (const algorithm of rateAlgorithms.filter((a) => a.kind !== 'sliding-window-log')) {
      for (let i = 0; i < keys.length; i += 500) {
        await Promise.all(keys.slice(i, i + 500).map((key) => store.charge({ key, algorithm, cost: 1 }, undefined)));
      }
      const buckets = new Set(keys.map((key) => store.redisKeys(key, algorithm)[0]!));
      expect(buckets.size).toBe(256);
      let total = 0;
      for (const bucket of buckets) {
        expect(await client.object('ENCODING', bucket)).toBe('listpack');
        total += (await client.memory('USAGE', bucket, 'SAMPLES', '0')) as number;
      }
      bytes[nameOf(algorithm)] = total / keys.length;
      expect(bytes[nameOf(algorithm)], nameOf(algorithm)).toBeLessThan(64);
    }
    const log = slidingWindowLog({ limit: 100, window: '1m' });
    await store.charge({ key: 'api:user:12345', algorithm: log, cost: 1 }, undefined);
    let logBytes = 0;
    for (const redisKey of store.redisKeys('api:user:12345', log))
      logBytes += (await client.memory('USAGE', redisKey)) as number;
    expect(logBytes).toBeLessThan(400);
    console.info('MEMORY USAGE bytes per key (compact layout, 125 keys per bucket; sliding log: one record):', {
      ...bytes,
      'sliding-window-log': logBytes,
    });
  });
});

describe('errors', () => {
  it('a Redis error rejects with a StoreError (RL_STORE_ERROR) that carries the cause', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ client: deployments.standalone, prefix });
    const algorithm = tokenBucket({ capacity: 5, refillRate: 1 });
    await deployments.standalone.rpush(store.redisKeys('k', algorithm)[0]!, 'not a bucket');
    await deployments.standalone.pexpire(store.redisKeys('k', algorithm)[0]!, 60_000);
    const error = await store.charge({ key: 'k', algorithm, cost: 1 }, undefined).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'RL_STORE_ERROR', name: 'StoreError' });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect(String((error as Error).message)).toMatch(/WRONGTYPE/);
    expect((error as StoreError).keyOnly).toBe(true);
  });

  it.each([true, false])(
    'one key of another type never opens the store-down circuit for the other keys (batch: %s)',
    async (batch) => {
      const prefix = freshPrefix();
      const store = new RedisStore({ client: deployments.standalone, prefix, batch });
      const algorithm = fixedWindow({ limit: 5, window: '1m' });
      const limiter = createLimiter({ algorithm, store, storeFailureThreshold: 3 });
      const circuits: unknown[] = [];
      limiter.on('circuit', (event) => circuits.push(event));
      // A key in another bucket hash than the broken one.
      const good = ['a', 'b', 'c', 'd', 'e'].find(
        (key) => store.redisKeys(key, algorithm)[0] !== store.redisKeys('bad', algorithm)[0],
      )!;
      const broken = store.redisKeys('bad', algorithm)[0]!;
      await deployments.standalone.set(broken, 'another program wrote this', 'PX', 60_000);
      for (let i = 0; i < 6; i++)
        expect(await limiter.consume('bad')).toMatchObject({ allowed: false, reason: 'store-error' });
      expect(circuits).toEqual([]);
      const decision = await limiter.consume(good);
      expect(decision).toMatchObject({ allowed: true, remaining: 4 });
      expect(decision.reason).toBeUndefined();
    },
  );
});
