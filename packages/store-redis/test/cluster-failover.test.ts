/**
 * A failed Cluster master fails only its own keys: on a 3-master + 3-replica Cluster of its own, one
 * master is killed under load; every decision for a key of the two other masters is still Redis's
 * (no `reason`, no 'storeError'), the killed master's keys get the failure policy (deny, with a
 * reason), and once its replica is promoted and the client has refreshed its slot table, its keys are
 * answered by Redis again.
 *
 * On ioredis (with the retries its documentation gives; the test asks it to refresh its slot table)
 * and node-redis 6, which refreshes its table by itself a while after a node's reconnections began
 * (`topologyRefreshOnReconnectionAttemptStrategy`, 5 s by default, 500 ms here: the README says so).
 *
 * The limiter runs on fake time (its timeout and its circuit's clock move only when the test advances
 * them, as in failure.test.ts); only the failover itself takes real time, polled with a deadline.
 */
import { Cluster, Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { createLimiter, tokenBucket, type Decision, type StoreErrorEvent } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { createCluster } from 'redis';
import { sleep, startRedisCluster, type RedisClusterHandle } from '@rl/test-support';

/** The Cluster of the running test, one per client (a test kills one of its masters). */
let cluster: RedisClusterHandle | undefined;

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const TIMEOUT_MS = 50;
const RETRY_MS = 1_000;
const THRESHOLD = 3;
const KEYS_PER_MASTER = 10;
/** How long the replica may take to be promoted and known to the client (node timeout 500 ms). */
const FAILOVER_DEADLINE_MS = 8_000;

/** A Cluster client under test: the master it knows for slot 0, and how to make it refresh its slot table (if it can be told). */
interface FailoverClient {
  client: RedisClient;
  masterOfSlot0(): string | undefined;
  refresh(): Promise<void>;
  close(): Promise<void>;
}

const clients: [string, (nodes: { host: string; port: number }[]) => Promise<FailoverClient>][] = [
  [
    'ioredis',
    async (nodes) => {
      const client = new Cluster(nodes, {
        retryDelayOnTryAgain: 2,
        maxRedirections: 20,
        redisOptions: { maxRetriesPerRequest: 1 },
      });
      client.on('error', () => {}); // the killed master's connection errors are expected
      return {
        client,
        masterOfSlot0: () => client.slots[0]?.[0],
        refresh: () => new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve())),
        close: async () => client.disconnect(),
      };
    },
  ],
  [
    'node-redis',
    async (nodes) => {
      const client = createCluster({
        rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
        topologyRefreshOnReconnectionAttemptStrategy: 500,
      });
      client.on('error', () => {});
      await client.connect();
      return {
        client,
        masterOfSlot0: () => client.slots[0]?.master?.address,
        // No public way to ask: node-redis refreshes by itself (after a node's failed reconnections, on MOVED).
        refresh: async () => {},
        close: async () => client.destroy(),
      };
    },
  ],
];

it.each(clients)(
  '%s: a killed master denies only its own keys; the others keep answering; its keys come back after the failover',
  async (name, connect) => {
    cluster = await startRedisCluster({ replicas: true });
    if (cluster.external) return; // a shared cluster is not ours to kill
    const { nodes, replicas } = cluster;
    const { client, masterOfSlot0, refresh, close } = await connect(nodes);
    const direct = new Redis({ host: nodes[1]!.host, port: nodes[1]!.port });
    try {
      const timers = new FakeTimers();
      const T0 = 1_800_000_000_000;
      const algorithm = tokenBucket({ capacity: 10_000, refillRate: 1, interval: '1h' });
      const store = new RedisStore({ client, prefix: `failover:${process.pid}:${name}:` });
      const limiter = createLimiter({
        algorithm,
        store,
        timers,
        clock: () => T0 + timers.now(),
        timeout: TIMEOUT_MS,
        storeRetryInterval: RETRY_MS,
        storeFailureThreshold: THRESHOLD,
      });
      const errors: string[] = [];
      limiter.on('storeError', (event: StoreErrorEvent) => errors.push(event.key));

      // KEYS_PER_MASTER keys on each master: the slot from Redis itself, the master from the harness's ranges.
      const slotsPerMaster = Math.ceil(16384 / nodes.length);
      const keysOf: string[][] = nodes.map(() => []);
      for (let i = 0; keysOf.some((keys) => keys.length < KEYS_PER_MASTER); i++) {
        const key = `user-${i}`;
        const slot = (await direct.cluster(
          'KEYSLOT',
          store.redisKeys(limiter.storageKey(key), algorithm)[0]!,
        )) as number;
        const keys = keysOf[Math.floor(slot / slotsPerMaster)]!;
        if (keys.length < KEYS_PER_MASTER) keys.push(key);
      }
      const [dead, ...healthy] = keysOf as [string[], ...string[][]];
      const alive = healthy.flat();

      // Before the failure: every key is Redis's, and its domain is the master that serves it.
      const before = await Promise.all(keysOf.flat().map((key) => limiter.consume(key)));
      expect(before.filter((d) => d.reason !== undefined)).toEqual([]);
      keysOf.forEach((keys, m) => {
        for (const key of keys)
          expect(store.failureDomain!(limiter.storageKey(key), algorithm)).toBe(`${nodes[m]!.host}:${nodes[m]!.port}`);
      });

      await cluster!.kill(nodes[0]!.port);
      const promoted = `${replicas[0]!.host}:${replicas[0]!.port}`;
      let healthyDecisions = 0;
      let deadDecisions = 0;
      let rounds = 0;
      /** The failure domains the killed master's keys had when they were called: the client's slot table may name none ('') or an unpromoted node for a while. */
      const deadDomains = new Set<string>();
      const deadline = Date.now() + FAILOVER_DEADLINE_MS;
      // Under load until the client knows the promoted replica: every healthy key's decision is Redis's.
      while (masterOfSlot0() !== promoted) {
        expect(Date.now(), 'the replica was not promoted in time').toBeLessThan(deadline);
        for (const key of dead) deadDomains.add(store.failureDomain!(limiter.storageKey(key), algorithm));
        const deadCalls = dead.map((key) => limiter.consume(key));
        const healthyNow = await Promise.all(alive.map((key) => limiter.consume(key)));
        expect(healthyNow.filter((d) => d.reason !== undefined || !d.allowed)).toEqual([]);
        healthyDecisions += healthyNow.length;
        // The killed master's calls that still wait are timed out by fake time and get the policy (deny).
        // A call may also be answered by Redis itself: the client can learn of the promoted replica
        // while the round runs (a MOVED updates that slot only, so the check above may not see it yet);
        // the killed master answers nothing, so such a decision is the promoted replica's, and right.
        await timers.advanceAsync(TIMEOUT_MS);
        const deadNow: Decision[] = await Promise.all(deadCalls);
        expect(deadNow.filter((d) => d.reason !== undefined && d.allowed)).toEqual([]);
        deadDecisions += deadNow.filter((d) => d.reason !== undefined).length;
        rounds++;
        if (rounds % 4 === 0) await refresh();
        await sleep(25);
      }
      expect(rounds).toBeGreaterThan(0);
      expect(healthyDecisions).toBeGreaterThan(0);
      expect(deadDecisions).toBeGreaterThan(0);
      // Only the killed master's keys failed, and the circuit kept them off the store: per failure
      // domain they had (each has its own circuit), the calls of its first round (all in flight when
      // it opened), then one probe per retry interval of fake time. Each such call is reported at most
      // twice: its failure, and the failed give-back of a grant that arrived after its timeout (the
      // client may send a queued command once it knows the promoted replica).
      const aliveKeys = new Set(alive.map((key) => limiter.storageKey(key)));
      expect(errors.filter((key) => aliveKeys.has(key))).toEqual([]);
      expect(errors.length).toBeGreaterThanOrEqual(THRESHOLD);
      const storeCalls = deadDomains.size * (KEYS_PER_MASTER + Math.ceil((rounds * TIMEOUT_MS) / RETRY_MS));
      expect(errors.length).toBeLessThanOrEqual(2 * storeCalls);
      expect(2 * storeCalls).toBeLessThan(deadDecisions / 2);

      // The slot table names the promoted replica: the dead master's keys are Redis's again (a new domain).
      for (const key of dead) expect(store.failureDomain!(limiter.storageKey(key), algorithm)).toBe(promoted);
      let back: Decision[] = [];
      while (Date.now() < deadline) {
        const calls = keysOf.flat().map((key) => limiter.consume(key));
        await sleep(100);
        await timers.advanceAsync(TIMEOUT_MS);
        back = await Promise.all(calls);
        if (back.every((d) => d.reason === undefined)) break;
      }
      expect(back.map((d) => [d.allowed, d.reason])).toEqual(keysOf.flat().map(() => [true, undefined]));
    } finally {
      direct.disconnect();
      await close();
    }
  },
  30_000,
);

it('a standalone client is one failure domain: the store has no failureDomain (the limiter keeps its one circuit)', () => {
  const client = new Redis({ lazyConnect: true });
  try {
    expect(new RedisStore({ client }).failureDomain).toBeUndefined();
  } finally {
    client.disconnect();
  }
});
