/**
 * Many configurations: the first INLINE_CONFIGURATIONS distinct configurations a store sees run
 * inline (constants in the script text), every further one by argument (one script per script name
 * and operation). Counted, never timed: the scripts the store defines and the scripts Redis caches
 * (`number_of_cached_scripts` of `INFO memory`, on every master of the Cluster) stay bounded for
 * 10,000 configurations, each decision equal to the memory store's; a configuration gives the same
 * decisions by argument as inline, for every algorithm kind; SCRIPT FLUSH is recovered from.
 */
import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  fixedWindow,
  slidingWindowLog,
  tokenBucket,
  withBlock,
  type Algorithm,
  type Decision,
  type Store,
} from '@rl/core';
import { kindSuites, runScenario, scenarios } from '@rl/core/testing';
import { MemoryStore } from '@rl/store-memory';
import { useRedisDeployments } from '@rl/test-support';
import { RedisStore } from './redis-store.js';
import { setInlineConfigurations } from './script-plans.js';
import { INLINE_CONFIGURATIONS } from './script-plan.js';

const deployments = useRedisDeployments('configurations');

const targets = [
  { name: 'standalone', client: (): Redis | Cluster => deployments.standalone },
  { name: 'cluster', client: (): Redis | Cluster => deployments.clustered },
] as const;

/** The Redis servers behind a client: itself, or every master of a Cluster. */
function serversOf(client: Redis | Cluster): Redis[] {
  return 'isCluster' in client && client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
}

/** `number_of_cached_scripts` of each server behind the client (`INFO memory`). */
async function cachedScripts(client: Redis | Cluster): Promise<number[]> {
  return Promise.all(
    serversOf(client).map(async (server) => {
      const info = await server.info('memory');
      const match = /^number_of_cached_scripts:(\d+)/m.exec(info);
      if (match === null) throw new Error('INFO memory has no number_of_cached_scripts');
      return Number(match[1]);
    }),
  );
}

/** Decisions as plain data: every field, the policy by name. */
const plain = ({ policy, ...fields }: Decision): Record<string, unknown> => ({ ...fields, policy: policy.name });

/** A store that sends every configuration by argument. */
function byArgumentStore(client: Redis | Cluster): RedisStore {
  const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
  setInlineConfigurations(store, 0);
  return store;
}

/** Decides `each(i)` for i in [0, count), `inFlight` at a time, in order of i within each batch. */
async function inBatches(count: number, inFlight: number, each: (i: number) => Promise<void>): Promise<void> {
  for (let start = 0; start < count; start += inFlight) {
    await Promise.all(Array.from({ length: Math.min(inFlight, count - start) }, (_, j) => each(start + j)));
  }
}

describe.each(targets)('many configurations on $name Redis', ({ client }) => {
  it('10,000 token-bucket configurations (and sliding logs and fixed windows) keep the scripts bounded, each decision the memory store’s', async () => {
    const CONFIGURATIONS = 10_000;
    const OTHERS = 100;
    const redis = new RedisStore({ client: client(), prefix: deployments.freshPrefix() });
    const memory = new MemoryStore({ sweepInterval: false });
    const before = await cachedScripts(client());
    let now = 1_764_500_000_000;
    const clock = (): number => now;
    // A new algorithm object per configuration, as a per-customer quota read from a database would be;
    // a few of other kinds among them.
    const algorithmOf = (i: number): Algorithm => {
      if (i < CONFIGURATIONS)
        return tokenBucket({ capacity: 5 + (i % 97), refillRate: 1 + Math.floor(i / 97) / 3, interval: '1m' });
      const j = i - CONFIGURATIONS;
      return j % 2 === 0
        ? slidingWindowLog({ limit: 3 + j, window: '1m' })
        : fixedWindow({ limit: 3 + j, window: 1000 + j });
    };
    const total = CONFIGURATIONS + OTHERS;
    const distinct = new Set(Array.from({ length: total }, (_, i) => JSON.stringify(algorithmOf(i).script.constants)));
    expect(distinct.size).toBe(total);
    const mismatches: string[] = [];
    // Two decisions per configuration, the second 1.5 s later with a cost of 3: a refill, a window passed or not.
    for (const [dt, cost] of [
      [0, 1],
      [1500, 3],
    ] as const) {
      now += dt;
      await inBatches(total, 100, async (i) => {
        const algorithm = algorithmOf(i);
        const options = { algorithm, clock, timeout: false as const, denyCache: false as const };
        const key = `c${i}`;
        const [actual, expected] = await Promise.all([
          createLimiter({ ...options, store: redis }).consume(key, cost),
          createLimiter({ ...options, store: memory }).consume(key, cost),
        ]);
        if (JSON.stringify(plain(actual)) !== JSON.stringify(plain(expected)))
          mismatches.push(`${i} at ${now}: ${JSON.stringify(plain(actual))} vs ${JSON.stringify(plain(expected))}`);
      });
    }
    expect(mismatches).toEqual([]);
    // Consume only: one script per inline configuration, plus one per script sent by argument (3 kinds);
    // and at most as many batch scripts (decisions of a configuration issued in the same turn).
    const bound = INLINE_CONFIGURATIONS + 3;
    expect(redis.scriptCount).toBeGreaterThanOrEqual(bound);
    expect(redis.scriptCount).toBeLessThanOrEqual(2 * bound);
    const after = await cachedScripts(client());
    const growth = after.map((n, i) => n - before[i]!);
    for (const grown of growth) expect(grown).toBeLessThanOrEqual(redis.scriptCount);
    console.log(
      `${total} configurations on ${serversOf(client()).length} server(s): the store defined ${redis.scriptCount} scripts; number_of_cached_scripts grew by ${growth.join(', ')}`,
    );
    memory.close();
  });

  it('after SCRIPT FLUSH a script sent by argument is loaded again (EVAL on NOSCRIPT) and decides as before', async () => {
    const store = byArgumentStore(client());
    const algorithm = tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' });
    const decide = () => store.charge({ key: 'k', algorithm, cost: 1 }, 1000).then((c) => c.decision);
    expect((await decide()).remaining).toBe(2);
    await Promise.all(serversOf(client()).map((server) => server.script('FLUSH')));
    expect((await cachedScripts(client())).reduce((a, b) => a + b)).toBe(0);
    expect((await decide()).remaining).toBe(1);
    // Redis TIME ('' for now) by argument as well.
    expect(plain((await store.charge({ key: 'k2', algorithm, cost: 1 }, undefined)).decision)).toMatchObject({
      allowed: true,
      remaining: 2,
    });
    // One script sent by argument, cached again on the master(s) that ran it.
    expect((await cachedScripts(client())).reduce((a, b) => a + b)).toBeGreaterThanOrEqual(1);
    expect(store.scriptCount).toBe(1);
  });

  it('every scenario table gives the same decisions by argument as inline', async () => {
    for (const scenario of scenarios) {
      const inline = new RedisStore({ client: client(), prefix: deployments.freshPrefix() });
      const argument = byArgumentStore(client());
      const expected = await runScenario(inline, scenario, { prefix: 'p' });
      const actual = await runScenario(argument, scenario, { prefix: 'p' });
      expect(
        actual.map((r) => r.decisions.map(plain)),
        scenario.name,
      ).toEqual(expected.map((r) => r.decisions.map(plain)));
      // The inline store defined a script per configuration and operation, the other one per script and
      // operation; a configuration with constants that change with time (a calendar's) is sent by argument by both.
      const configurations = new Set(scenario.algorithms.map((a) => JSON.stringify(a.script))).size;
      expect(argument.scriptCount).toBeLessThanOrEqual(inline.scriptCount);
      if (configurations > 1 && scenario.algorithms.every((a) => a.script.timed === undefined))
        expect(argument.scriptCount).toBeLessThan(inline.scriptCount);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Random sequences, every kind, every operation: inline and by argument agree (standalone Redis)

/** Every kind's configurations made of drawn numbers (both modes of the leaky bucket), from its kind suite. */
const configurationOf = fc.constantFrom(...kindSuites.flatMap((suite) => suite.configurations));
const limitOf = fc.integer({ min: 1, max: 9 });
/** Numbers of the kind the algorithms derive: thirds, tiny and huge rates, fractional windows. */
const rateOf = fc.constantFrom(1, 1 / 3, 2.5, 1e-6, 999_999_999_999_999, 0.7);
const windowOf = fc.constantFrom(1000, 250, 1234.5, 60_000, 1000 / 3);

/** A rate algorithm of every kind, with a lockout or not; concurrency. */
const algorithms: fc.Arbitrary<Algorithm> = fc
  .tuple(configurationOf, limitOf, rateOf, windowOf, fc.boolean(), fc.constantFrom(0, 0, 500, 1000 / 3))
  .map(([configuration, limit, rate, windowMs, countDenied, blockMs]) => {
    const algorithm = configuration({ limit, rate, windowMs, countDenied });
    return algorithm.stateKind === 'leases' || blockMs === 0 ? algorithm : withBlock(algorithm, blockMs);
  });

interface Op {
  dt: number;
  op: 'consume' | 'peek' | 'undo' | 'reset' | 'acquire' | 'release';
  cost: number;
  key: 'a' | 'b';
}

const ops = fc.array(
  fc.record({
    dt: fc.oneof(
      fc.integer({ min: 0, max: 400 }),
      fc.integer({ min: -300, max: 0 }),
      fc.double({ min: 0, max: 2000, noNaN: true }),
    ),
    op: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'undo', 'reset', 'acquire', 'release') as fc.Arbitrary<
      Op['op']
    >,
    cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 9 }), fc.constantFrom(0.5, 1 / 3, 2.25)),
    key: fc.constantFrom('a' as const, 'b' as const),
  }),
  { minLength: 1, maxLength: 25 },
);

/** One operation on `store`; what it returns (a decision, or the state after an undo) as plain data. */
/** One operation on `store`; an undo gives back at the time of the key's last consume (`charges`). */
async function apply(
  store: Store,
  algorithm: Algorithm,
  op: Op,
  now: number,
  leases: string[],
  charges: Map<string, number>,
): Promise<unknown> {
  if (op.op === 'reset') return store.reset(op.key, algorithm);
  if (algorithm.stateKind === 'leases') {
    const leaseAlgorithm = algorithm as Parameters<NonNullable<Store['acquire']>>[1];
    if (op.op === 'acquire') {
      const lease = `${op.key}.${leases.length}`;
      leases.push(lease);
      return plain(await store.acquire!(op.key, leaseAlgorithm, lease, now));
    }
    const lease = op.op === 'release' ? leases.pop() : undefined;
    if (lease !== undefined) return store.release!(lease.slice(0, 1), leaseAlgorithm, lease);
    return plain(await store.peek(op.key, algorithm, 0, now));
  }
  const cost = Math.min(op.cost, algorithm.maxCost);
  if (op.op === 'undo') await store.giveBack({ key: op.key, algorithm, cost, chargedAt: charges.get(op.key) }, now);
  // Acquire and release are a consume and a peek for a rate; an undo is followed by a peek of what it left.
  if (op.op === 'consume' || op.op === 'acquire') {
    charges.set(op.key, now);
    return plain((await store.charge({ key: op.key, algorithm, cost }, now)).decision);
  }
  return plain(await store.peek(op.key, algorithm, op.op === 'undo' ? 0 : cost, now));
}

describe('inline and by argument on random sequences (standalone Redis)', () => {
  it('every kind and operation (lockouts, give-backs at the time of their charge): identical decisions at the same explicit now', async () => {
    await fc.assert(
      fc.asyncProperty(
        algorithms,
        fc.constantFrom(0, 5000, 1_764_500_000_123.25),
        ops,
        async (algorithm, start: number, sequence) => {
          const inline = new RedisStore({ client: deployments.standalone, prefix: deployments.freshPrefix() });
          const argument = byArgumentStore(deployments.standalone);
          const inlineLeases: string[] = [];
          const argumentLeases: string[] = [];
          const charges = [new Map<string, number>(), new Map<string, number>()] as const;
          let now = start;
          for (const op of sequence) {
            now = Math.max(0, now + op.dt);
            const expected = await apply(inline, algorithm, op, now, inlineLeases, charges[0]);
            expect(await apply(argument, algorithm, op, now, argumentLeases, charges[1])).toEqual(expected);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
