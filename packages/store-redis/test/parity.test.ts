/**
 * Parity: the Lua ports must return exactly the decisions of the TS steps. The same operations at the
 * same `now` go through a MemoryStore (which runs the TS step) and a RedisStore; every decision must
 * be identical, field by field. Two sources of operations: the scenario tables of @rl/core/testing,
 * and random sequences (fast-check) with fractional costs and times, clocks that go back,
 * configuration changes, undo, reset and peeks. The tables run on every client the store takes
 * (test/support/clients.ts), standalone and Cluster; the random sequences on each family's current
 * major, standalone.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  concurrency,
  fixedWindow,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Decision,
  type Store,
} from '@rl/core';
import { withBlock, type ConcurrencyAlgorithm } from '@rl/core/store';
import { lockoutScenarios, runScenario, scenarios } from '@rl/core/testing';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { ALL, FULL, type ClientKind } from './support/clients.js';

const deployments = useRedisDeployments('parity');
const freshPrefix = (): string => deployments.freshPrefix();

/** Decisions as plain data (the policy by name). */
function plain(d: Decision): Record<string, unknown> {
  return { allowed: d.allowed, limit: d.limit, remaining: d.remaining, resetMs: d.resetMs, retryAfterMs: d.retryAfterMs, delayMs: d.delayMs, policy: d.policy.name, at: d.at, reason: d.reason };
}

/**
 * Registers, in the calling scope, hooks that connect a client of `kind` to the file's standalone
 * server or cluster and close it after; returns the client, usable in the tests.
 */
function useClient(kind: ClientKind, deployment: 'standalone' | 'cluster'): () => RedisClient {
  let client: RedisClient | undefined;
  beforeAll(async () => {
    client = deployment === 'standalone' ? await kind.standalone(deployments.url) : await kind.cluster(deployments.nodes);
  });
  afterAll(async () => {
    if (client !== undefined) await kind.close(client);
  });
  return () => client!;
}

const targets = ALL.flatMap((kind) => (['standalone', 'cluster'] as const).map((deployment) => ({ name: `${deployment} Redis, ${kind.name}`, kind, deployment })));

describe.each(targets)('parity with the memory store on $name', ({ kind, deployment }) => {
  const client = useClient(kind, deployment);
  describe('scenario tables of @rl/core/testing', () => {
    it.each([...scenarios, ...lockoutScenarios].map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
      const memory = new MemoryStore({ sweepInterval: false });
      const redis = new RedisStore({ client: client(), prefix: freshPrefix() });
      const expected = await runScenario(memory, scenario, { prefix: 'p' });
      const actual = await runScenario(redis, scenario, { prefix: 'p' });
      expect(actual.map((r) => r.decisions.map(plain))).toEqual(expected.map((r) => r.decisions.map(plain)));
      memory.close();
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Random sequences

const windowMs = fc.constantFrom(1000, 250, 1234.5, 60_000);
const limit = fc.integer({ min: 1, max: 12 });

/** Two configurations of one algorithm kind: the second models a changed configuration over the same state. */
const unblockedAlgorithms: fc.Arbitrary<[Algorithm, Algorithm]> = fc.oneof(
  fc.tuple(limit, windowMs, fc.boolean(), limit, fc.boolean()).map(([l, w, cd, l2, cd2]) => [fixedWindow({ limit: l, window: w, countDenied: cd }), fixedWindow({ limit: l2, window: w, countDenied: cd2 })] as [Algorithm, Algorithm]),
  fc.tuple(limit, windowMs, fc.boolean(), limit).map(([l, w, cd, l2]) => [slidingWindowLog({ limit: l, window: w, countDenied: cd }), slidingWindowLog({ limit: l2, window: w / 2 })] as [Algorithm, Algorithm]),
  fc.tuple(limit, windowMs, fc.boolean(), limit).map(([l, w, cd, l2]) => [slidingWindowCounter({ limit: l, window: w, countDenied: cd }), slidingWindowCounter({ limit: l2, window: w })] as [Algorithm, Algorithm]),
  fc.tuple(limit, fc.constantFrom(1, 2.5, 0.3, 7, 1 / 3), fc.constantFrom(1000, 60_000, 333), limit).map(([c, r, i, c2]) => [tokenBucket({ capacity: c, refillRate: r, interval: i }), tokenBucket({ capacity: c2, refillRate: r * 2, interval: i })] as [Algorithm, Algorithm]),
  fc.tuple(limit, fc.constantFrom(1, 3, 0.7, 10), fc.constantFrom(1000, 250), fc.constantFrom('meter' as const, 'shape' as const), limit).map(([c, r, i, m, c2]) => [leakyBucket({ capacity: c, leakRate: r, interval: i, mode: m }), leakyBucket({ capacity: c2, leakRate: r, interval: i, mode: m })] as [Algorithm, Algorithm]),
);

/** The same, and sometimes with a lockout (the blocking variants of the twins), on both or on one of them. */
const numericOrLogAlgorithms: fc.Arbitrary<[Algorithm, Algorithm]> = fc
  .tuple(unblockedAlgorithms, fc.constantFrom(0, 0, 300, 1500.5), fc.boolean())
  .map(([[a, b], blockMs, both]) => (blockMs === 0 ? [a, b] : [withBlock(a, blockMs), both ? withBlock(b, blockMs) : b]));

interface RateOp {
  dt: number;
  op: 'consume' | 'peek' | 'undo' | 'undoCharged' | 'reset' | 'reserve';
  cost: number;
  /** For 'undoCharged': which earlier consume of the key is given back, with the time it was charged at. */
  pick: number;
  key: 'a' | 'b';
  config: 0 | 1;
}

const rateOps = fc.array(
  fc.record({
    // Mostly forward, sometimes back (a clock going backwards), sometimes fractional.
    dt: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: -300, max: 0 }), fc.double({ min: 0, max: 2000, noNaN: true }), fc.constant(0)),
    op: fc.constantFrom('consume', 'consume', 'consume', 'consume', 'peek', 'undo', 'undoCharged', 'reset', 'reserve', 'reserve') as fc.Arbitrary<RateOp['op']>,
    pick: fc.nat(),
    cost: fc.oneof(fc.constant(1), fc.constant(1), fc.integer({ min: 1, max: 12 }), fc.constantFrom(0.5, 1.5, 2.25, 0.1, 1 / 3)),
    key: fc.constantFrom('a' as const, 'b' as const),
    config: fc.constantFrom(0 as const, 0 as const, 0 as const, 1 as const),
  }),
  { minLength: 1, maxLength: 40 },
);

const startTime = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 10_000 }), fc.constant(1_764_500_000_123.25), fc.double({ min: 1.7e12, max: 1.8e12, noNaN: true }));

/** The consumes and reservations of each key so far (their cost, the time they were charged at and their delay), for 'undoCharged'. */
type Charges = Map<string, { cost: number; at: number; delay: number }[]>;

async function applyRate(store: Store, algorithm: Algorithm, op: RateOp, now: number, charges: Charges): Promise<Record<string, unknown> | undefined> {
  const cost = Math.min(op.cost, algorithm.maxCost);
  switch (op.op) {
    case 'consume': {
      const decision = await store.consume(op.key, algorithm, cost, now);
      if (decision.allowed) charges.set(op.key, [...(charges.get(op.key) ?? []), { cost, at: decision.at, delay: decision.delayMs }]);
      return plain(decision);
    }
    case 'reserve': {
      // No wait, a quarter of the horizon, or all of it.
      const maxDelay = [0, 0.25, 1][op.pick % 3]! * algorithm.maxReserveMs;
      const decision = await store.reserve!(op.key, algorithm, cost, maxDelay, now);
      if (decision.allowed) charges.set(op.key, [...(charges.get(op.key) ?? []), { cost, at: decision.at, delay: decision.delayMs }]);
      return plain(decision);
    }
    case 'undoCharged': {
      const earlier = charges.get(op.key) ?? [];
      const charge = earlier[op.pick % Math.max(1, earlier.length)] ?? { cost, at: now, delay: 0 };
      // A delayed charge (a reservation, a shaper's consume) is given back to its slot: a cancel.
      if (charge.delay > 0) await store.undo(op.key, algorithm, Math.min(charge.cost, algorithm.maxCost), now, charge.at, charge.delay);
      else await store.undo(op.key, algorithm, Math.min(charge.cost, algorithm.maxCost), now, charge.at);
      return plain(await store.peek(op.key, algorithm, 0, now));
    }
    case 'peek':
      return plain(await store.peek(op.key, algorithm, op.cost > 10 ? 0 : cost, now));
    case 'undo':
      await store.undo(op.key, algorithm, cost, now);
      return plain(await store.peek(op.key, algorithm, 0, now));
    case 'reset':
      await store.reset(op.key, algorithm);
      return undefined;
  }
}

/** Every Redis key under `prefix` must have an expiry. */
async function expectAllKeysExpire(client: Redis, prefix: string): Promise<void> {
  const keys = await client.keys(`${prefix}*`);
  for (const key of keys) expect(await client.pttl(key), key).toBeGreaterThan(0);
}

describe.each(FULL)('parity on random sequences (standalone Redis, $name)', (kind) => {
  const client = useClient(kind, 'standalone');
  it('numeric and log algorithms: identical decisions, and every key written has an expiry', async () => {
    await fc.assert(
      fc.asyncProperty(numericOrLogAlgorithms, startTime, rateOps, async (configs, start, ops) => {
        const memory = new MemoryStore({ sweepInterval: false });
        const prefix = freshPrefix();
        const redis = new RedisStore({ client: client(), prefix });
        let now = start;
        const memoryCharges: Charges = new Map();
        const redisCharges: Charges = new Map();
        for (const op of ops) {
          now = Math.max(0, now + op.dt);
          const algorithm = configs[op.config];
          const expected = await applyRate(memory, algorithm, op, now, memoryCharges);
          const actual = await applyRate(redis, algorithm, op, now, redisCharges);
          expect(actual).toEqual(expected);
        }
        await expectAllKeysExpire(deployments.standalone, prefix);
        memory.close();
      }),
      { numRuns: 150 },
    );
  });

  it('concurrency leases: identical decisions for acquire, release and peek', async () => {
    const leaseOps = fc.array(
      fc.record({
        dt: fc.oneof(fc.integer({ min: 0, max: 700 }), fc.integer({ min: -200, max: 0 }), fc.double({ min: 0, max: 500, noNaN: true })),
        op: fc.constantFrom('acquire', 'acquire', 'release', 'peek') as fc.Arbitrary<'acquire' | 'release' | 'peek'>,
        lease: fc.integer({ min: 0, max: 9 }),
        key: fc.constantFrom('a' as const, 'b' as const),
      }),
      { minLength: 1, maxLength: 40 },
    );
    const algorithms = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom(100, 1000, 2500.5)).map(([l, lease]) => concurrency({ limit: l, lease }));
    await fc.assert(
      fc.asyncProperty(algorithms, startTime, leaseOps, async (algorithm: ConcurrencyAlgorithm, start, ops) => {
        const memory = new MemoryStore({ sweepInterval: false });
        const prefix = freshPrefix();
        const redis = new RedisStore({ client: client(), prefix });
        let now = start;
        for (const op of ops) {
          now = Math.max(0, now + op.dt);
          const leaseId = `lease-${op.lease}`;
          if (op.op === 'release') {
            memory.release(op.key, algorithm, leaseId);
            await redis.release(op.key, algorithm, leaseId);
            continue;
          }
          const expected = op.op === 'acquire' ? memory.acquire(op.key, algorithm, leaseId, now) : memory.peek(op.key, algorithm, 0, now);
          const actual = op.op === 'acquire' ? await redis.acquire(op.key, algorithm, leaseId, now) : await redis.peek(op.key, algorithm, 0, now);
          expect(plain(actual)).toEqual(plain(expected));
        }
        await expectAllKeysExpire(deployments.standalone, prefix);
        memory.close();
      }),
      { numRuns: 100 },
    );
  });
});
