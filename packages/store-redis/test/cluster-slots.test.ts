/**
 * A limit's keys live in one Cluster slot by construction, and a slot migration during traffic costs
 * no request its answer and no unit a request it did not admit. On a Cluster of its own (3 masters),
 * since the migration moves a slot.
 *
 * The slots come from Redis itself (`CLUSTER KEYSLOT`), for every key name the store builds: each
 * operation's script keys and a reset's keys, captured from a client that records them.
 */
import fc from 'fast-check';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { concurrency, createLimiter, slidingWindowLog, tokenBucket, type Algorithm } from '@rl/core';
import type { ConcurrencyAlgorithm } from '@rl/core/store';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { NODE_REDIS_6 } from './support/clients.js';
import { everyRateAlgorithm, startRedisCluster, type RedisClusterHandle } from '@rl/test-support';

let cluster: RedisClusterHandle | undefined;
/** A direct connection to each master, in the harness's order. */
let nodes: Redis[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  nodes = cluster.nodes.map(({ host, port }) => new Redis({ host, port }));
});

afterAll(async () => {
  for (const node of nodes) node.disconnect();
  await cluster?.stop();
});

/** A client that records the keys of every command the store sends (script keys, DEL, HDEL). */
function recordingClient(isCluster: boolean, keyPrefix = '') {
  let sent: string[] = [];
  const reply = Buffer.alloc(48);
  const client: Record<string, unknown> = {
    isCluster,
    options: { keyPrefix },
    defineCommand(name: string, definition: { numberOfKeys: number }) {
      client[`${name}Buffer`] = (...args: string[]) => {
        sent.push(...args.slice(0, definition.numberOfKeys).map((key) => keyPrefix + key));
        return Promise.resolve(reply);
      };
    },
    del(...keys: string[]) {
      sent.push(...keys.map((key) => keyPrefix + key));
      return Promise.resolve(keys.length);
    },
    hdel(key: string) {
      sent.push(keyPrefix + key);
      return Promise.resolve(1);
    },
    // A reset's notice: nobody listens (this client opens no connection of its own, so its store cannot subscribe).
    publish: () => Promise.resolve(0),
    spublish: () => Promise.resolve(0),
  };
  return {
    client: client as never,
    /** The keys sent since the last call. */
    take(): string[] {
      const keys = sent;
      sent = [];
      return keys;
    },
  };
}

/** Every key name the store builds for `key`: the keys of each operation of the algorithm, and of a reset. */
async function keysOf(store: RedisStore, take: () => string[], key: string, algorithm: Algorithm): Promise<string[]> {
  if (algorithm.stateKind === 'leases') {
    await store.acquire(key, algorithm as ConcurrencyAlgorithm, 'lease', undefined);
    await store.release(key, algorithm as ConcurrencyAlgorithm, 'lease');
  } else {
    await store.giveBack({ key, algorithm, cost: 2 }, 5);
  }
  await store.charge({ key, algorithm, cost: 1 }, undefined);
  await store.peek(key, algorithm, 1, 5);
  await store.reset(key, algorithm);
  return take();
}

/** Storage keys of every shape: braces anywhere, `#`, long, unicode, lone surrogates, control characters. */
const awkward = [
  '{',
  '}',
  '{}',
  '}{',
  'a}b{c',
  '{x}',
  '#tag',
  '#',
  '',
  'x'.repeat(10_000),
  '{'.repeat(300),
  '\uD800',
  '\uDC00x',
  '\0\u0001',
  'ключ🙂',
  'user:{1}:ip',
];
const generated = fc.sample(
  fc.oneof(
    fc.string({ unit: fc.constantFrom('{', '}', '#', ':', 'a', 'é', '🙂', '\uD800') }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', minLength: 150, maxLength: 260 }),
  ),
  { numRuns: 600, seed: 11 },
);
const algorithms: Algorithm[] = [...everyRateAlgorithm(5), concurrency({ limit: 2 })];

describe('one slot per limit, by construction', () => {
  it.each(['', 'app:', '{app}:', 'a{', 'a}{b}'])(
    'every key name of every algorithm shares the slot of its limit (keyPrefix %j)',
    async (keyPrefix) => {
      const { client, take } = recordingClient(true, keyPrefix);
      const store = new RedisStore({ client, prefix: 'rl:', batch: false });
      const groups: string[][] = [];
      for (const key of [...awkward, ...generated]) {
        for (const algorithm of algorithms) groups.push(await keysOf(store, take, key, algorithm));
      }
      const pipeline = nodes[0]!.pipeline();
      for (const group of groups) for (const name of group) pipeline.cluster('KEYSLOT', name);
      const slots = (await pipeline.exec())!.map(([error, slot]) => {
        expect(error).toBeNull();
        return slot as number;
      });
      let at = 0;
      let multiKey = 0;
      for (const group of groups) {
        const own = slots.slice(at, at + group.length);
        at += group.length;
        expect(new Set(own).size, group.join(' ')).toBe(1);
        if (new Set(group).size > 1) multiKey++;
      }
      // The sliding log's groups hold two keys each (the log and its :sum).
      expect(multiKey).toBe(awkward.length + generated.length);
    },
  );

  it('a Cluster client whose keyPrefix starts an empty hash tag is refused, naming the field', () => {
    for (const keyPrefix of ['{}', 'app{}:', 'a{}{b}']) {
      const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true, redisOptions: { keyPrefix } });
      expect(() => new RedisStore({ client: cluster })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore.client' }),
      );
      cluster.disconnect();
      // On a standalone client one slot does not matter: accepted.
      const standalone = new Redis({ lazyConnect: true, keyPrefix });
      expect(() => new RedisStore({ client: standalone })).not.toThrow();
      standalone.disconnect();
    }
  });
});

/** Redis's count of TRYAGAIN replies on every master. */
async function tryAgains(): Promise<number> {
  let count = 0;
  for (const node of nodes)
    count += Number(/errorstat_TRYAGAIN:count=(\d+)/.exec(await node.info('errorstats'))?.[1] ?? 0);
  return count;
}

/**
 * The clients of the migration test: ioredis with the settings RedisStore's documentation gives for
 * the default 50 ms timeout (TRYAGAIN retried every 2 ms, 20 redirections at most: a request that used
 * them up would fail, and the test with it; with ioredis's defaults and a 50 ms timeout, all 300 were
 * answered by the failure policy), and node-redis with its defaults (the store retries TRYAGAIN the
 * same way, since node-redis does not).
 */
const migrationClients: [string, () => Promise<{ client: RedisClient; close(): Promise<void> }>][] = [
  [
    'ioredis',
    async () => {
      const client = new Cluster(cluster!.nodes, { retryDelayOnTryAgain: 2, maxRedirections: 20 });
      return { client, close: async () => client.disconnect() };
    },
  ],
  [
    'node-redis',
    async () => {
      const client = await NODE_REDIS_6.cluster(cluster!.nodes);
      return { client, close: () => NODE_REDIS_6.close(client) };
    },
  ],
];

describe('a slot migration during traffic', () => {
  // Alone, each request is one call that Redis refuses until the :sum follows; batched (the default),
  // a few calls carry them all, so the split is held for fewer refusals.
  const variants = migrationClients.flatMap(([name, connect]) => [
    [`${name}, one call per decision`, connect, false] as const,
    [`${name}, batched`, connect, true] as const,
  ]);
  it.each(variants)(
    '%s: splits a sliding log from its :sum for a while: every request is answered within the timeout, every unit charged is an admitted one',
    async (name, connect, batch) => {
      // The limiter's timeout is longer here only so that a loaded CI machine's timer delays cannot
      // answer a request that Redis answered.
      const { client, close } = await connect();
      try {
        const store = new RedisStore({ client, prefix: 'mig:', batch });
        const refusals = batch ? 30 : 350;
        // A key of its own per client, hence a slot of its own: the other client's run moved its slot.
        const hot = `hot-${name.replace(/\W+/g, '-')}`;
        const log = slidingWindowLog({ limit: 100_000, window: '1h' });
        const limiter = createLimiter({ algorithm: log, store, timeout: '1s', denyCache: false });
        for (let i = 0; i < 20; i++) await limiter.consume(hot);
        const [list, sum] = store.redisKeys(hot, log) as [string, string];
        const slot = (await nodes[0]!.cluster('KEYSLOT', list)) as number;
        const ids = await Promise.all(nodes.map(async (node) => (await node.cluster('MYID')) as string));
        const owner = await (async () => {
          for (const [i, node] of nodes.entries()) if ((await node.cluster('COUNTKEYSINSLOT', slot)) === 2) return i;
          throw new Error('no master holds the hot key');
        })();
        const source = nodes[owner]!;
        const targetIndex = (owner + 1) % nodes.length;
        const target = nodes[targetIndex]!;
        await target.cluster('SETSLOT', slot, 'IMPORTING', ids[owner]!);
        await source.cluster('SETSLOT', slot, 'MIGRATING', ids[targetIndex]!);
        for (const node of nodes) await node.config('RESETSTAT');

        // The log moves first: until its :sum follows, a script naming both gets TRYAGAIN on either node.
        await source.migrate('127.0.0.1', cluster!.nodes[targetIndex]!.port, list, 0, 5000);
        const traffic = Promise.all(Array.from({ length: 300 }, () => limiter.consume(hot)));
        // Calls made straight to the store while split, answered late: what they took is given back.
        const late = Promise.all(
          Array.from({ length: 50 }, () =>
            store.charge({ key: hot, algorithm: log, cost: 1 }, undefined).then((c) => c.decision),
          ),
        );
        // Hold the split until Redis has refused the traffic `refusals` times (alone: once per request).
        for (let polls = 0; (await tryAgains()) < refusals; polls++) expect(polls).toBeLessThan(10_000);
        await source.migrate('127.0.0.1', cluster!.nodes[targetIndex]!.port, sum, 0, 5000);
        // The slot's new owner is told first, then its old one, then the rest (as redis-cli does).
        for (const node of [target, source, ...nodes.filter((n) => n !== target && n !== source)])
          await node.cluster('SETSLOT', slot, 'NODE', ids[targetIndex]!);

        const decisions = await traffic;
        expect(decisions.filter((d) => !d.allowed || d.reason !== undefined)).toEqual([]);
        const lateDecisions = await late;
        expect(lateDecisions.every((d) => d.allowed)).toBe(true);
        for (let i = 0; i < lateDecisions.length; i++)
          await store.giveBack({ key: hot, algorithm: log, cost: 1 }, undefined);

        expect(await tryAgains()).toBeGreaterThanOrEqual(refusals);
        // Everything is on the target now, and it holds exactly the admitted requests' units.
        expect(await source.cluster('COUNTKEYSINSLOT', slot)).toBe(0);
        expect(await target.cluster('COUNTKEYSINSLOT', slot)).toBe(2);
        expect(await target.llen(list)).toBe(20 + 300);
        expect((await target.getBuffer(sum))!.readDoubleLE(0)).toBe(20 + 300);
        expect((await limiter.peek(hot)).remaining).toBe(100_000 - 320);
      } finally {
        await close();
      }
    },
  );
});

/** The index in `nodes` of the master that serves `slot` (from `CLUSTER SLOTS`). */
async function masterOfSlot(slot: number): Promise<number> {
  const ranges = (await nodes[0]!.cluster('SLOTS')) as unknown as [number, number, [string, number, string]][];
  const range = ranges.find(([start, end]) => slot >= start && slot <= end)!;
  return cluster!.nodes.findIndex(({ port }) => port === range[2][1]);
}

describe('a slot migration that splits a sliding log, with the default timeout and ioredis defaults (issue 25)', () => {
  it('opens no circuit for the master: the bystanders on it are answered by Redis, only the moving key gets the policy', async () => {
    const client = new Cluster(cluster!.nodes);
    try {
      const store = new RedisStore({ client, prefix: 'by:' });
      const log = slidingWindowLog({ limit: 100_000, window: '1h' });
      const bucket = tokenBucket({ capacity: 100_000, refillRate: 1_000 });
      const hotLimiter = createLimiter({ algorithm: log, store, denyCache: false });
      const bystanderLimiter = createLimiter({ algorithm: bucket, store });
      const hot = 'hot-bystanders';
      for (let i = 0; i < 5; i++) await hotLimiter.consume(hot);
      const [list, sum] = store.redisKeys(hot, log) as [string, string];
      const slot = (await nodes[0]!.cluster('KEYSLOT', list)) as number;
      const owner = await masterOfSlot(slot);
      // 20 keys whose buckets live on the same master as the log.
      const bystanders: string[] = [];
      for (let i = 0; bystanders.length < 20; i++) {
        const key = `bystander-${i}`;
        const bucketKey = store.redisKeys(bystanderLimiter.storageKey(key), bucket)[0]!;
        if ((await masterOfSlot((await nodes[0]!.cluster('KEYSLOT', bucketKey)) as number)) === owner)
          bystanders.push(key);
      }
      for (const key of bystanders) expect((await bystanderLimiter.consume(key)).reason).toBeUndefined();
      const ids = await Promise.all(nodes.map(async (node) => (await node.cluster('MYID')) as string));
      const targetIndex = (owner + 1) % nodes.length;
      await nodes[targetIndex]!.cluster('SETSLOT', slot, 'IMPORTING', ids[owner]!);
      await nodes[owner]!.cluster('SETSLOT', slot, 'MIGRATING', ids[targetIndex]!);
      await nodes[owner]!.migrate('127.0.0.1', cluster!.nodes[targetIndex]!.port, list, 0, 5000);
      // Split: the log's requests are refused (TRYAGAIN, retried by ioredis every 100 ms, past the 50 ms
      // timeout), while the bystanders' keep coming; rounds until the hot key has timed out many times.
      const bystanderReasons: (string | undefined)[] = [];
      let hotTimeouts = 0;
      for (let round = 0; round < 40 && hotTimeouts < 10; round++) {
        const hotRound = Promise.all(Array.from({ length: 5 }, () => hotLimiter.consume(hot)));
        for (const key of bystanders) bystanderReasons.push((await bystanderLimiter.consume(key)).reason);
        hotTimeouts += (await hotRound).filter((d) => d.reason === 'timeout').length;
      }
      await nodes[owner]!.migrate('127.0.0.1', cluster!.nodes[targetIndex]!.port, sum, 0, 5000);
      for (const node of [
        nodes[targetIndex]!,
        nodes[owner]!,
        ...nodes.filter((_, i) => i !== targetIndex && i !== owner),
      ])
        await node.cluster('SETSLOT', slot, 'NODE', ids[targetIndex]!);
      expect(hotTimeouts).toBeGreaterThanOrEqual(10);
      expect(bystanderReasons.filter((reason) => reason !== undefined)).toEqual([]);
      await store.close();
    } finally {
      client.disconnect();
    }
  });
});

describe("the reset notices' slot moved (a resharding, a manual failover)", () => {
  it.each(migrationClients)(
    '%s: a store whose subscription Redis dropped opens it again: no deny cache keeps a denial a reset lifted',
    async (name, connect) => {
      const [a, b] = [await connect(), await connect()];
      try {
        const prefix = `moved-${name.replace(/\W+/g, '-')}:`;
        const algorithm = tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' });
        const storeA = new RedisStore({ client: a.client, prefix });
        const storeB = new RedisStore({ client: b.client, prefix });
        const limiterA = createLimiter({ algorithm, store: storeA, timeout: '1s', denyCache: true });
        const limiterB = createLimiter({ algorithm, store: storeB, timeout: '1s', denyCache: true });
        expect((await limiterA.consume('k')).allowed).toBe(true);
        expect((await limiterA.consume('k')).allowed).toBe(false); // cached on A; A subscribes now
        await limiterB.consume('k'); // B subscribes too
        // Both hear notices: a reset is confirmed by both, and A admits again.
        await vi.waitFor(() => limiterB.reset('k'), RETRY);
        expect((await limiterA.consume('k')).allowed).toBe(true);
        expect((await limiterA.consume('k')).allowed).toBe(false); // denied by Redis, then cached
        expect((await limiterA.consume('k')).reason).toBe('deny-cache');

        // The notices' slot moves to another master: Redis drops both stores' shard subscriptions.
        const slot = (await nodes[0]!.cluster('KEYSLOT', `${prefix}resets`)) as number;
        const ids = await Promise.all(nodes.map(async (node) => (await node.cluster('MYID')) as string));
        const target = (await masterOfSlot(slot)) === 0 ? 1 : 0;
        for (const node of [nodes[target]!, ...nodes.filter((_, i) => i !== target)])
          await node.cluster('SETSLOT', slot, 'NODE', ids[target]!);

        // A reset on B now reaches A (or says it could not be confirmed): A never keeps the lifted denial.
        await vi.waitFor(async () => {
          await limiterB.reset('k').catch((error: unknown) => {
            if ((error as Error).name !== 'ResetUnconfirmedError') throw error;
          });
          expect((await limiterA.consume('k')).allowed).toBe(true);
        }, RETRY);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    },
  );
});

/** How a check that waits on the Cluster's subscriptions is retried: every 100 ms, for at most 10 s. */
const RETRY = { interval: 100, timeout: 10_000 };
