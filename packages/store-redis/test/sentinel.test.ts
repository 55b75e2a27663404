/**
 * The store through Redis Sentinel, on a real deployment of its own (a master, its replica, one
 * sentinel: @rl/test-support's startRedisSentinel): ioredis 6 and 5 and iovalkey (`new Redis({ sentinels,
 * name })`) and node-redis 6 and 5 (`createSentinel({ name, sentinelRootNodes })`) decide (consume, peek,
 * reserve, undo) on the master, batch the decisions of one turn (fewer EVALSHA on the master than
 * decisions), and after `SENTINEL FAILOVER` keep deciding on the promoted replica, whose script cache
 * is empty: each client's first call there is answered NOSCRIPT and the store sends the script again.
 *
 * ioredis (and iovalkey) follows a failover it is told of: with `failoverDetector: true` it listens
 * to the sentinels' `+switch-master` and reconnects to the new master. Without it, it stays on the
 * old master, which answers writes as a master until a sentinel turns it into a replica (about 10 s
 * later, which drops its connections): the decisions of that while are lost with the old master's
 * data. node-redis listens to the sentinels by itself.
 *
 * Every client is connected to the same deployment and the failover is one, for all of them. During
 * the switch the limiter (on fake time, as in cluster-failover.test.ts) gives its failure policy to
 * the calls that fail or wait; the failover itself takes real time, polled with a deadline.
 */
import { Redis as Ioredis6 } from 'ioredis';
import { Redis as Ioredis5 } from 'ioredis5';
import { Redis as Iovalkey } from 'iovalkey';
import { createSentinel as createSentinel6 } from 'redis';
import { createSentinel as createSentinel5 } from 'redis5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, tokenBucket, type Decision } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { cli, sleep, startRedisSentinel, type RedisNodeAddress, type RedisSentinelHandle } from '@rl/test-support';

/** A client of the deployment, connected through its sentinels. */
interface SentinelClient {
  client: RedisClient;
  /** The port of the master the client sends its commands to, as the client reports it. */
  masterPort(): number | undefined;
  close(): void;
}

interface IoredisSentinelClient {
  readonly stream?: { remotePort?: number };
  on(event: 'error', listener: () => void): unknown;
  ping(): Promise<unknown>;
  disconnect(): void;
}
interface NodeRedisSentinelClient {
  on(event: 'error', listener: () => void): unknown;
  connect(): Promise<unknown>;
  getMasterNode(): { port: number } | undefined;
  destroy(): void;
}

type IoredisConstructor = new (options: {
  sentinels: RedisNodeAddress[];
  name: string;
  failoverDetector: boolean;
}) => IoredisSentinelClient;
type CreateSentinel = (options: { name: string; sentinelRootNodes: RedisNodeAddress[] }) => NodeRedisSentinelClient;

function ioredisClient(Redis: IoredisConstructor) {
  return async (sentinel: RedisSentinelHandle): Promise<SentinelClient> => {
    const client = new Redis({ sentinels: sentinel.sentinels, name: sentinel.name, failoverDetector: true });
    client.on('error', () => {}); // the switch's connection errors are expected
    await client.ping();
    return {
      client: client as unknown as RedisClient,
      masterPort: () => client.stream?.remotePort,
      close: () => client.disconnect(),
    };
  };
}

function nodeRedisClient(createSentinel: CreateSentinel) {
  return async (sentinel: RedisSentinelHandle): Promise<SentinelClient> => {
    const client = createSentinel({ name: sentinel.name, sentinelRootNodes: sentinel.sentinels });
    client.on('error', () => {});
    await client.connect();
    return {
      client: client as unknown as RedisClient,
      masterPort: () => client.getMasterNode()?.port,
      close: () => client.destroy(),
    };
  };
}

const kinds = [
  { name: 'ioredis 6', connect: ioredisClient(Ioredis6 as unknown as IoredisConstructor) },
  { name: 'ioredis 5', connect: ioredisClient(Ioredis5 as unknown as IoredisConstructor) },
  { name: 'iovalkey', connect: ioredisClient(Iovalkey as unknown as IoredisConstructor) },
  { name: 'node-redis 6', connect: nodeRedisClient(createSentinel6 as unknown as CreateSentinel) },
  { name: 'node-redis 5', connect: nodeRedisClient(createSentinel5 as unknown as CreateSentinel) },
];

let sentinel: RedisSentinelHandle;
const connected = new Map<string, SentinelClient>();

beforeAll(async () => {
  sentinel = await startRedisSentinel();
  for (const kind of kinds) connected.set(kind.name, await kind.connect(sentinel));
});

afterAll(async () => {
  for (const { close } of connected.values()) close();
  await sentinel?.stop();
});

/** A field of the server's INFO `section` (`cmdstat_evalsha` gives its `calls=`), 0 when absent. */
function info(port: number, section: string, field: string): number {
  const line = cli(port, ['INFO', section])
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  if (line === undefined) return 0;
  const value = line.slice(field.length + 1).trim();
  return Number(/(?:calls|count)=(\d+)/.exec(value)?.[1] ?? value);
}

describe.each(kinds)('$name through Sentinel', ({ name }) => {
  const prefix = `sentinel:${name}:`;

  it('decides on the master: consume, peek, reserve, undo', async () => {
    const { client, masterPort } = connected.get(name)!;
    expect(masterPort()).toBe(sentinel.master.port);
    const store = new RedisStore({ client, prefix });
    expect(store.failureDomain).toBeUndefined(); // one master: one failure domain, as a standalone client
    const algorithm = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });
    const consumed = (await store.charge({ key: 'decide', algorithm, cost: 1 }, undefined)).decision;
    expect([consumed.allowed, consumed.remaining]).toEqual([true, 4]);
    expect((await store.peek('decide', algorithm, 0, undefined)).remaining).toBe(4);
    const reserved = (await store.charge({ key: 'decide', algorithm, cost: 3, maxDelayMs: 0 }, undefined)).decision;
    expect([reserved.allowed, reserved.remaining, reserved.delayMs]).toEqual([true, 1, 0]);
    await store.giveBack(
      { key: 'decide', algorithm, cost: 3, chargedAt: reserved.at, delayMs: reserved.delayMs },
      undefined,
    );
    expect((await store.peek('decide', algorithm, 0, undefined)).remaining).toBe(4);
    // The state is on the master (a sentinel's client never writes elsewhere).
    expect(cli(sentinel.master.port, ['EXISTS', store.redisKeys('decide', algorithm)[0]!]).trim()).toBe('1');
  });

  it('batches the consumes of one turn: 10 decisions, 2 EVALSHA on the master (the first alone, the rest in one call)', async () => {
    const { client } = connected.get(name)!;
    const store = new RedisStore({ client, prefix });
    const algorithm = tokenBucket({ capacity: 100, refillRate: 1, interval: '1h' });
    const turn = () =>
      Promise.all(
        Array.from({ length: 10 }, () =>
          store.charge({ key: 'batch', algorithm, cost: 1 }, undefined).then((c) => c.decision),
        ),
      );
    await turn(); // loads the script of a consume alone and the batch script (EVAL on NOSCRIPT)
    const before = {
      evalsha: info(sentinel.master.port, 'commandstats', 'cmdstat_evalsha'),
      eval: info(sentinel.master.port, 'commandstats', 'cmdstat_eval'),
    };
    const decisions = await turn();
    expect(decisions.map((d) => d.remaining).sort((a, b) => b - a)).toEqual([89, 88, 87, 86, 85, 84, 83, 82, 81, 80]);
    expect({
      evalsha: info(sentinel.master.port, 'commandstats', 'cmdstat_evalsha') - before.evalsha,
      eval: info(sentinel.master.port, 'commandstats', 'cmdstat_eval') - before.eval,
    }).toEqual({ evalsha: 2, eval: 0 });
  });

  it("a reset on one instance reaches another instance's deny cache (the store's reset channel through Sentinel)", async () => {
    const kind = kinds.find((k) => k.name === name)!;
    const other = await kind.connect(sentinel);
    const storeA = new RedisStore({ client: connected.get(name)!.client, prefix: `${prefix}resets:` });
    const storeB = new RedisStore({ client: other.client, prefix: `${prefix}resets:` });
    try {
      let now = 1_800_000_000_000;
      const options = {
        algorithm: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }),
        clock: () => now,
        blockDuration: '1h' as const,
      };
      const limiterA = createLimiter({ ...options, store: storeA });
      const limiterB = createLimiter({ ...options, store: storeB });
      expect((await limiterA.consume('ann')).allowed).toBe(true);
      expect((await limiterA.consume('ann')).allowed).toBe(false);
      expect((await limiterB.consume('ann')).allowed).toBe(false);
      // Both stores subscribe (on the master) with their limiter's first cached denial; the first
      // connection of a subscription forgets what was cached before it, so B caches again after.
      const subscribed = () =>
        Number(
          cli(sentinel.master.port, ['PUBSUB', 'NUMSUB', `{${prefix}resets:resets}`])
            .trim()
            .split('\n')
            .at(-1),
        );
      for (let i = 0; i < 200 && subscribed() < 2; i++) await sleep(10);
      expect(subscribed()).toBe(2);
      let cached = await limiterB.consume('ann');
      for (let i = 0; i < 3 && cached.reason !== 'deny-cache'; i++) cached = await limiterB.consume('ann');
      expect(cached.reason).toBe('deny-cache');
      now += 60_000;
      await limiterA.reset('ann');
      const started = Date.now();
      let decision = await limiterB.consume('ann');
      while (decision.reason === 'deny-cache' && Date.now() - started < 2_000) {
        await sleep(10);
        decision = await limiterB.consume('ann');
      }
      expect([decision.allowed, decision.reason]).toEqual([true, undefined]);
    } finally {
      await Promise.all([storeA.close(), storeB.close()]);
      other.close();
    }
  });
});

const TIMEOUT_MS = 50;
/** How long the promotion, then each client's switch, may take (real time). */
const SWITCH_DEADLINE_MS = 8_000;
const KEYS = ['a', 'b', 'c', 'd', 'e'];
/** Keys first decided once the client is on the new master (the others were replicated there before the failover). */
const NEW_KEYS = ['f', 'g', 'h', 'i', 'j'];

it('after SENTINEL FAILOVER every client decides on the promoted replica: NOSCRIPT there is answered by sending the scripts again', async () => {
  const limiters = kinds.map(({ name }, i) => {
    const timers = new FakeTimers();
    // A configuration of its own per client (its own script text): each client meets NOSCRIPT on the promoted replica.
    const algorithm = tokenBucket({ capacity: 1_000 + i, refillRate: 1, interval: '1h' });
    const store = new RedisStore({ client: connected.get(name)!.client, prefix: `failover:${name}:` });
    const limiter = createLimiter({
      algorithm,
      store,
      timers,
      timeout: TIMEOUT_MS,
      storeRetryInterval: 100,
      storeFailureThreshold: 3,
    });
    return { name, timers, limiter, algorithm, store, ...connected.get(name)! };
  });
  // A decision per key, each the store's: fake time does not move, so no call times out.
  const decide = ({ limiter }: (typeof limiters)[number], keys: string[]): Promise<Decision[]> =>
    Promise.all(keys.map((key) => limiter.consume(key)));
  // During the switch: a decision per key, the calls that still wait after a while timed out by fake time (the failure policy).
  const round = async (l: (typeof limiters)[number]): Promise<Decision[]> => {
    const calls = decide(l, KEYS);
    await sleep(25);
    await l.timers.advanceAsync(TIMEOUT_MS);
    return calls;
  };
  for (const l of limiters)
    expect((await decide(l, KEYS)).map((d) => [d.allowed, d.reason])).toEqual(KEYS.map(() => [true, undefined]));
  // Scripts are not replicated: the replica has none, the promoted master will have to be sent them.
  expect(info(sentinel.replica.port, 'memory', 'number_of_cached_scripts')).toBe(0);

  const promoted = await sentinel.failover();
  expect(promoted.port).toBe(sentinel.replica.port);

  const resumed = await Promise.all(
    limiters.map(async (l) => {
      const deadline = Date.now() + SWITCH_DEADLINE_MS;
      for (;;) {
        expect(Date.now(), `${l.name} did not resume on the new master in time`).toBeLessThan(deadline);
        const onNewMaster = l.masterPort() === promoted.port;
        // Some decisions get the failure policy (`reason` set) while the client switches: fine.
        const decisions = await round(l);
        if (onNewMaster && decisions.every((d) => d.reason === undefined && d.allowed)) return l.name;
      }
    }),
  );
  expect(resumed).toEqual(kinds.map(({ name }) => name));
  // Each client's decisions are on the new master: its new keys are there, and its scripts, sent by
  // EVAL after NOSCRIPT (one configuration per client: at least one NOSCRIPT and one EVAL each).
  for (const l of limiters) {
    expect((await decide(l, NEW_KEYS)).map((d) => [d.allowed, d.reason])).toEqual(
      NEW_KEYS.map(() => [true, undefined]),
    );
    for (const key of NEW_KEYS)
      expect(cli(promoted.port, ['EXISTS', l.store.redisKeys(l.limiter.storageKey(key), l.algorithm)[0]!]).trim()).toBe(
        '1',
      );
  }
  expect(info(promoted.port, 'errorstats', 'errorstat_NOSCRIPT')).toBeGreaterThanOrEqual(kinds.length);
  expect(info(promoted.port, 'commandstats', 'cmdstat_eval')).toBeGreaterThanOrEqual(kinds.length);
  expect(info(promoted.port, 'memory', 'number_of_cached_scripts')).toBeGreaterThanOrEqual(kinds.length);
}, 20_000);
