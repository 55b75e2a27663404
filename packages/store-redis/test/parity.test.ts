/**
 * Parity: the Lua ports must return exactly the decisions of the TS steps. The same operations at the
 * same `now` go through a MemoryStore (which runs the TS step) and a RedisStore; every decision must
 * be identical, field by field. Two sources of operations: the scenario tables of @rl/core/testing,
 * and random sequences (fast-check) with fractional costs and times, clocks that go back,
 * configuration changes, undo, reset and peeks, and idempotent charges beside bans and lockouts. The
 * tables run on every client the store takes (test/support/clients.ts), standalone and Cluster; the
 * random sequences on each family's current major, standalone.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  calendarWindow,
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
import { withBans, withBlock, type Charged, type ConcurrencyAlgorithm, type IdempotentCharge } from '@rl/core/store';
import { lockoutScenarios, runScenario, scenarios } from '@rl/core/testing';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { ALL, FULL, type ClientKind } from './support/clients.js';

const deployments = useRedisDeployments('parity');
const freshPrefix = (): string => deployments.freshPrefix();

/**
 * Registers, in the calling scope, hooks that connect a client of `kind` to the file's standalone
 * server or cluster and close it after; returns the client, usable in the tests.
 */
function useClient(kind: ClientKind, deployment: 'standalone' | 'cluster'): () => RedisClient {
  let client: RedisClient | undefined;
  beforeAll(async () => {
    client =
      deployment === 'standalone' ? await kind.standalone(deployments.url) : await kind.cluster(deployments.nodes);
  });
  afterAll(async () => {
    if (client !== undefined) await kind.close(client);
  });
  return () => client!;
}

/** Decisions as plain data: every field, the policy by name. */
const plain = ({ policy, ...fields }: Decision): Record<string, unknown> => ({ ...fields, policy: policy.name });

/** How the clock of a random sequence moves between two operations, in ms; each kind of move equally likely. */
interface ClockMoves {
  /** Whole ms forward, up to this. */
  forward: number;
  /** Whole ms back (a clock going backwards), up to this. */
  back: number;
  /** Fractions of a ms forward, up to this; none when left out. */
  fractional?: number;
  /** Also no move at all (two operations at one instant). */
  still?: boolean;
}

/** The time between two operations of a random sequence. */
function clockMoves({ forward, back, fractional, still = false }: ClockMoves): fc.Arbitrary<number> {
  return fc.oneof(
    fc.integer({ min: 0, max: forward }),
    fc.integer({ min: -back, max: 0 }),
    ...(fractional === undefined ? [] : [fc.double({ min: 0, max: fractional, noNaN: true })]),
    ...(still ? [fc.constant(0)] : []),
  );
}

/** The memory store (no sweep) and a Redis store of `client` on a fresh prefix: the two a parity test compares. */
function storesToCompare(client: RedisClient): { memory: MemoryStore; redis: RedisStore; prefix: string } {
  const prefix = freshPrefix();
  return { memory: new MemoryStore({ sweepInterval: false }), redis: new RedisStore({ client, prefix }), prefix };
}

/** Each client of `kinds` on a standalone server and on a Cluster. */
const targetsOf = (kinds: readonly ClientKind[]) =>
  kinds.flatMap((kind) =>
    (['standalone', 'cluster'] as const).map((deployment) => ({
      name: `${deployment} Redis, ${kind.name}`,
      kind,
      deployment,
    })),
  );

const targets = targetsOf(ALL);

describe.each(targets)('parity with the memory store on $name', ({ kind, deployment }) => {
  const client = useClient(kind, deployment);
  describe('scenario tables of @rl/core/testing', () => {
    it.each([...scenarios, ...lockoutScenarios].map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
      const { memory, redis } = storesToCompare(client());
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
  fc
    .tuple(limit, windowMs, fc.boolean(), limit, fc.boolean())
    .map(
      ([l, w, cd, l2, cd2]) =>
        [
          fixedWindow({ limit: l, window: w, countDenied: cd }),
          fixedWindow({ limit: l2, window: w, countDenied: cd2 }),
        ] as [Algorithm, Algorithm],
    ),
  fc
    .tuple(
      limit,
      fc.constantFrom('hour' as const, 'day' as const),
      fc.constantFrom('UTC', 'Europe/Paris', 'America/St_Johns'),
      fc.boolean(),
      limit,
    )
    .map(
      ([l, period, timeZone, cd, l2]) =>
        [
          calendarWindow({ limit: l, period, timeZone, countDenied: cd }),
          calendarWindow({ limit: l2, period, timeZone }),
        ] as [Algorithm, Algorithm],
    ),
  fc
    .tuple(limit, windowMs, fc.boolean(), limit)
    .map(
      ([l, w, cd, l2]) =>
        [
          slidingWindowLog({ limit: l, window: w, countDenied: cd }),
          slidingWindowLog({ limit: l2, window: w / 2 }),
        ] as [Algorithm, Algorithm],
    ),
  fc
    .tuple(limit, windowMs, fc.boolean(), limit)
    .map(
      ([l, w, cd, l2]) =>
        [
          slidingWindowCounter({ limit: l, window: w, countDenied: cd }),
          slidingWindowCounter({ limit: l2, window: w }),
        ] as [Algorithm, Algorithm],
    ),
  fc
    .tuple(limit, fc.constantFrom(1, 2.5, 0.3, 7, 1 / 3), fc.constantFrom(1000, 60_000, 333), limit)
    .map(
      ([c, r, i, c2]) =>
        [
          tokenBucket({ capacity: c, refillRate: r, interval: i }),
          tokenBucket({ capacity: c2, refillRate: r * 2, interval: i }),
        ] as [Algorithm, Algorithm],
    ),
  fc
    .tuple(
      limit,
      fc.constantFrom(1, 3, 0.7, 10),
      fc.constantFrom(1000, 250),
      fc.constantFrom('meter' as const, 'shape' as const),
      limit,
    )
    .map(
      ([c, r, i, m, c2]) =>
        [
          leakyBucket({ capacity: c, leakRate: r, interval: i, mode: m }),
          leakyBucket({ capacity: c2, leakRate: r, interval: i, mode: m }),
        ] as [Algorithm, Algorithm],
    ),
);

/** The same, and sometimes with a lockout (the blocking variants of the twins), on both or on one of them. */
const numericOrLogAlgorithms: fc.Arbitrary<[Algorithm, Algorithm]> = fc
  .tuple(unblockedAlgorithms, fc.constantFrom(0, 0, 300, 1500.5), fc.boolean())
  .map(([[a, b], blockMs, both]) =>
    blockMs === 0 ? [a, b] : [withBlock(a, blockMs), both ? withBlock(b, blockMs) : b],
  );

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
    dt: clockMoves({ forward: 400, back: 300, fractional: 2000, still: true }),
    op: fc.constantFrom(
      'consume',
      'consume',
      'consume',
      'consume',
      'peek',
      'undo',
      'undoCharged',
      'reset',
      'reserve',
      'reserve',
    ) as fc.Arbitrary<RateOp['op']>,
    pick: fc.nat(),
    cost: fc.oneof(
      fc.constant(1),
      fc.constant(1),
      fc.integer({ min: 1, max: 12 }),
      fc.constantFrom(0.5, 1.5, 2.25, 0.1, 1 / 3),
    ),
    key: fc.constantFrom('a' as const, 'b' as const),
    config: fc.constantFrom(0 as const, 0 as const, 0 as const, 1 as const),
  }),
  { minLength: 1, maxLength: 40 },
);

// 1_764_547_199_500: half a second before 2025-12-01T00:00Z, where hours, days, months end.
const startTime = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 10_000 }),
  fc.constant(1_764_500_000_123.25),
  fc.constant(1_764_547_199_500),
  fc.double({ min: 1.7e12, max: 1.8e12, noNaN: true }),
);

/**
 * A random sequence from a drawn {@link startTime}: the start and the operations at their times (`now`:
 * from the start, the clock moves by each operation's `dt`, never below 0).
 */
function timedSequence<Op extends { dt: number }>(
  ops: fc.Arbitrary<Op[]>,
): fc.Arbitrary<{ start: number; ops: (Op & { now: number })[] }> {
  return fc.tuple(startTime, ops).map(([start, drawn]) => {
    let now = start;
    return { start, ops: drawn.map((op) => ({ ...op, now: (now = Math.max(0, now + op.dt)) })) };
  });
}

/** {@link rateOps} at their times. */
const rateSequence = timedSequence(rateOps);

/** The consumes and reservations of each key so far (their cost, the time they were charged at and their delay), for 'undoCharged'. */
type Charges = Map<string, { cost: number; at: number; delay: number }[]>;

async function applyRate(
  store: Store,
  algorithm: Algorithm,
  op: RateOp,
  now: number,
  charges: Charges,
): Promise<Record<string, unknown> | undefined> {
  const cost = Math.min(op.cost, algorithm.maxCost);
  switch (op.op) {
    case 'consume': {
      const decision = (await store.charge({ key: op.key, algorithm, cost }, now)).decision;
      if (decision.allowed)
        charges.set(op.key, [...(charges.get(op.key) ?? []), { cost, at: decision.at, delay: decision.delayMs }]);
      return plain(decision);
    }
    case 'reserve': {
      // No wait, a quarter of the horizon, or all of it.
      const maxDelay = [0, 0.25, 1][op.pick % 3]! * algorithm.maxReserveMs;
      const decision = (await store.charge({ key: op.key, algorithm, cost, maxDelayMs: maxDelay }, now)).decision;
      if (decision.allowed)
        charges.set(op.key, [...(charges.get(op.key) ?? []), { cost, at: decision.at, delay: decision.delayMs }]);
      return plain(decision);
    }
    case 'undoCharged': {
      const earlier = charges.get(op.key) ?? [];
      const charge = earlier[op.pick % Math.max(1, earlier.length)] ?? { cost, at: now, delay: 0 };
      // A delayed charge (a reservation, a shaper's consume) is given back to its slot: a cancel.
      if (charge.delay > 0)
        await store.giveBack(
          {
            key: op.key,
            algorithm,
            cost: Math.min(charge.cost, algorithm.maxCost),
            chargedAt: charge.at,
            delayMs: charge.delay,
          },
          now,
        );
      else
        await store.giveBack(
          { key: op.key, algorithm, cost: Math.min(charge.cost, algorithm.maxCost), chargedAt: charge.at },
          now,
        );
      return plain(await store.peek(op.key, algorithm, 0, now));
    }
    case 'peek':
      return plain(await store.peek(op.key, algorithm, op.cost > 10 ? 0 : cost, now));
    case 'undo':
      await store.giveBack({ key: op.key, algorithm, cost }, now);
      return plain(await store.peek(op.key, algorithm, 0, now));
    case 'reset':
      await store.reset(op.key, algorithm);
      return undefined;
  }
}

/** Up to 40 acquires, releases and peeks of ten leases (`lease-0` to `lease-9`) on two keys; `fractional`: times also move by fractions of a ms. */
function leaseOps(fractional: boolean) {
  return fc.array(
    fc.record({
      dt: clockMoves({ forward: 700, back: 200, fractional: fractional ? 500 : undefined }),
      op: fc.constantFrom('acquire', 'acquire', 'release', 'peek') as fc.Arbitrary<'acquire' | 'release' | 'peek'>,
      leaseId: fc.integer({ min: 0, max: 9 }).map((lease) => `lease-${lease}`),
      key: fc.constantFrom('a' as const, 'b' as const),
    }),
    { minLength: 1, maxLength: 40 },
  );
}

const leaseAlgorithms = fc
  .tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom(100, 1000, 2500.5))
  .map(([l, lease]) => concurrency({ limit: l, lease }));

/** An operation of {@link leaseOps} at its time ({@link timedSequence}), under its lease's id. */
interface TimedLeaseOp {
  readonly op: 'acquire' | 'release' | 'peek';
  readonly key: string;
  readonly leaseId: string;
  readonly now: number;
}

/**
 * Applies `op` to `store`: an acquire's or a peek's decision (plain), nothing for a release. The store
 * is called before the first await, so that the calls of one turn are made in that turn.
 */
async function applyLeaseOp(
  store: Store,
  algorithm: ConcurrencyAlgorithm,
  op: TimedLeaseOp,
): Promise<Record<string, unknown> | undefined> {
  if (op.op === 'release') return void (await store.release(op.key, algorithm, op.leaseId));
  return plain(
    op.op === 'acquire'
      ? await store.acquire(op.key, algorithm, op.leaseId, op.now)
      : await store.peek(op.key, algorithm, 0, op.now),
  );
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
      fc.asyncProperty(numericOrLogAlgorithms, rateSequence, async (configs, { ops }) => {
        const { memory, redis, prefix } = storesToCompare(client());
        const memoryCharges: Charges = new Map();
        const redisCharges: Charges = new Map();
        for (const op of ops) {
          const algorithm = configs[op.config];
          const expected = await applyRate(memory, algorithm, op, op.now, memoryCharges);
          const actual = await applyRate(redis, algorithm, op, op.now, redisCharges);
          expect(actual).toEqual(expected);
        }
        await expectAllKeysExpire(deployments.standalone, prefix);
        memory.close();
      }),
      { numRuns: 150 },
    );
  });

  it('concurrency leases: identical decisions for acquire, release and peek', async () => {
    await fc.assert(
      fc.asyncProperty(
        leaseAlgorithms,
        timedSequence(leaseOps(true)),
        async (algorithm: ConcurrencyAlgorithm, { ops }) => {
          const { memory, redis, prefix } = storesToCompare(client());
          for (const op of ops) {
            const expected = await applyLeaseOp(memory, algorithm, op);
            expect(await applyLeaseOp(redis, algorithm, op)).toEqual(expected);
          }
          await expectAllKeysExpire(deployments.standalone, prefix);
          memory.close();
        },
      ),
      { numRuns: 100 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Idempotent charges beside bans and lockouts: the same replays, conflicts, bounds and block denials.

/** Digested ids (16 characters) and fingerprints (8), as `idempotentCharge` makes them. */
const IDS = ['id-aaaaaaaaaaaaa', 'id-bbbbbbbbbbbbb', 'id-ccccccccccccc'];
const FINGERPRINTS = ['print-01', 'print-02'];

interface IdempotentOp {
  dt: number;
  op: 'consume' | 'reserve' | 'giveBack' | 'ban' | 'unban' | 'peek';
  id: number;
  fingerprint: number;
  cost: number;
  /** A ban's duration; for a give-back, which earlier charge. */
  pick: number;
}

const idempotentOps = fc.array(
  fc.record({
    // Mostly forward, sometimes back: records expire on the caller's clock, blocks never end early.
    dt: clockMoves({ forward: 600, back: 200, fractional: 1500 }),
    op: fc.constantFrom(
      'consume',
      'consume',
      'consume',
      'consume',
      'reserve',
      'giveBack',
      'ban',
      'unban',
      'peek',
    ) as fc.Arbitrary<IdempotentOp['op']>,
    id: fc.integer({ min: 0, max: IDS.length - 1 }),
    fingerprint: fc.constantFrom(0, 0, 0, 1),
    cost: fc.constantFrom(1, 1, 2, 0.5),
    pick: fc.integer({ min: 1, max: 3000 }),
  }),
  { minLength: 1, maxLength: 40 },
);

/** A charge's decision as plain data, with what it took (a replay, a conflict) and the id it was remembered under. */
const marked = ({ decision, took, conflict, idempotencyId }: Charged): Record<string, unknown> => ({
  ...plain(decision),
  replayed: took === 'replayed',
  conflict: conflict === true,
  idempotencyId,
});

/** A rate algorithm (the first of {@link unblockedAlgorithms}) with bans, or a third of the time with a lockout of 900.5 ms. */
const bannedOrBlockedAlgorithms = fc
  .tuple(unblockedAlgorithms, fc.constantFrom(0, 0, 900.5))
  .map(([[algorithm], blockMs]) => (blockMs > 0 ? withBlock(algorithm, blockMs) : withBans(algorithm)));

describe.each(FULL)(
  'parity of idempotent charges beside bans and lockouts, on random sequences (standalone Redis, $name)',
  (kind) => {
    const client = useClient(kind, 'standalone');
    it('identical decisions and marks (replayed, conflict, banned): charges with ids of two fingerprints, give-backs that forget them, bans, unbans, lockouts, a bound on replays and ids', async () => {
      await fc.assert(
        fc.asyncProperty(
          bannedOrBlockedAlgorithms,
          fc.integer({ min: 1, max: 3 }),
          timedSequence(idempotentOps),
          async (algorithm, maxReplays, { ops }) => {
            const { memory, redis, prefix } = storesToCompare(client());
            const stores: [Store, { cost: number; at: number; delay: number; id: string }[]][] = [
              [memory, []],
              [redis, []],
            ];
            for (const { now, ...op } of ops) {
              const cost = Math.min(op.cost, algorithm.maxCost);
              const idempotency: IdempotentCharge = {
                id: IDS[op.id]!,
                fingerprint: FINGERPRINTS[op.fingerprint]!,
                ttlMs: 2_500,
                maxIds: 2,
                maxReplays,
              };
              const results: unknown[] = [];
              for (const [store, charged] of stores) {
                if (op.op === 'ban') await store.ban!('k', algorithm, op.pick, now);
                else if (op.op === 'unban') await store.unban!('k', algorithm);
                else if (op.op === 'peek') results.push(plain(await store.peek('k', algorithm, 0, now)));
                else if (op.op === 'giveBack') {
                  const charge = charged[op.pick % Math.max(1, charged.length)];
                  if (charge !== undefined)
                    await store.giveBack(
                      {
                        key: 'k',
                        algorithm,
                        cost: charge.cost,
                        chargedAt: charge.at,
                        delayMs: charge.delay > 0 ? charge.delay : undefined,
                        idempotencyId: charge.id,
                      },
                      now,
                    );
                  results.push(plain(await store.peek('k', algorithm, 0, now)));
                } else {
                  const maxDelay = op.op === 'reserve' ? algorithm.maxReserveMs / 4 : undefined;
                  const c = await store.charge({ key: 'k', algorithm, cost, maxDelayMs: maxDelay, idempotency }, now);
                  const d = c.decision;
                  // What a limiter gives back with the id: a charge that is no replay nor conflict.
                  if (d.allowed && c.took !== 'replayed' && c.conflict !== true)
                    charged.push({ cost, at: d.at, delay: d.delayMs, id: idempotency.id });
                  // The store says so: `idempotencyId` is set exactly for an admitting charge remembered under its id.
                  expect(c.idempotencyId).toBe(
                    d.allowed && c.took === 'charged' && c.conflict !== true ? idempotency.id : undefined,
                  );
                  results.push(marked(c));
                }
              }
              expect(results[1]).toEqual(results[0]);
            }
            await expectAllKeysExpire(deployments.standalone, prefix);
            memory.close();
          },
        ),
        { numRuns: 150 },
      );
    });
  },
);

// ---------------------------------------------------------------------------------------------
// Batches: decisions issued in the same turn go to Redis as one script call (RedisStore's `batch`,
// on by default). Each decision must be what it would have been alone, in the order issued: the
// memory store runs each turn's operations one after another, Redis gets them all at once.

/** Script calls Redis has run (`EVALSHA` and `EVAL` in `INFO commandstats`), on every master of a Cluster. */
async function scriptCalls(deployment: 'standalone' | 'cluster'): Promise<number> {
  let calls = 0;
  for (const node of deployment === 'standalone' ? [deployments.standalone] : deployments.clustered.nodes('master')) {
    const info = await node.info('commandstats');
    calls +=
      Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0) +
      Number(/^cmdstat_eval:calls=(\d+)/m.exec(info)?.[1] ?? 0);
  }
  return calls;
}

/** One store call of a rate operation (a reset is not a script: it runs in a turn of its own). */
async function issueRate(
  store: Store,
  algorithm: Algorithm,
  op: RateOp,
  now: number,
  charges: Charges,
): Promise<Decision | void> {
  const cost = Math.min(op.cost, algorithm.maxCost);
  switch (op.op) {
    case 'consume':
      return (await store.charge({ key: op.key, algorithm, cost }, now)).decision;
    case 'reserve':
      return (
        await store.charge(
          { key: op.key, algorithm, cost, maxDelayMs: [0, 0.25, 1][op.pick % 3]! * algorithm.maxReserveMs },
          now,
        )
      ).decision;
    case 'peek':
      return store.peek(op.key, algorithm, op.cost > 10 ? 0 : cost, now);
    case 'undo':
      return store.giveBack({ key: op.key, algorithm, cost }, now);
    case 'undoCharged': {
      const earlier = charges.get(op.key) ?? [];
      const charge = earlier[op.pick % Math.max(1, earlier.length)] ?? { cost, at: now, delay: 0 };
      return store.giveBack(
        {
          key: op.key,
          algorithm,
          cost: Math.min(charge.cost, algorithm.maxCost),
          chargedAt: charge.at,
          delayMs: charge.delay > 0 ? charge.delay : undefined,
        },
        now,
      );
    }
    case 'reset':
      return store.reset(op.key, algorithm);
  }
}

/**
 * Loads every script the turns use (each operation's alone, and the batch): the
 * first call of a script that Redis has not cached fails with NOSCRIPT and node-redis sends it again
 * by EVAL (see src/clients/node-redis.ts), after the calls issued behind it in the same turn. Those
 * calls are concurrent, and either order is one Redis could have run; the test compares with the
 * order issued, so it runs on cached scripts.
 */
async function warmUp(redis: RedisStore, configs: readonly Algorithm[], now: number): Promise<void> {
  // On the keys the turns use, then reset: on a Cluster each node caches its own scripts.
  for (const key of ['a', 'b']) {
    for (const algorithm of configs) {
      await redis.charge({ key, algorithm, cost: 1 }, now);
      await redis.charge({ key, algorithm, cost: 1, maxDelayMs: 0 }, now);
      await redis.peek(key, algorithm, 1, now);
      await redis.giveBack({ key, algorithm, cost: 1 }, now);
      await redis.giveBack({ key, algorithm, cost: 1, chargedAt: now }, now);
      await redis.giveBack({ key, algorithm, cost: 1, chargedAt: now, delayMs: 1 }, now);
      await Promise.all([
        redis.charge({ key, algorithm, cost: 1 }, now),
        redis.charge({ key, algorithm, cost: 1 }, now),
      ]);
      await redis.reset(key, algorithm);
    }
  }
}

const batchTargets = targetsOf(FULL);

describe.each(batchTargets)('parity of batched decisions ($name)', ({ kind, deployment }) => {
  const client = useClient(kind, deployment);
  it('operations issued in the same turn: each decision what it is alone, in the order issued, in fewer script calls than decisions', async () => {
    const turns = fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 12 });
    let decisions = 0;
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(numericOrLogAlgorithms, rateSequence, turns, async (configs, { start, ops }, sizes) => {
        const { memory, redis, prefix } = storesToCompare(client());
        await warmUp(redis, configs, start);
        const callsBefore = await scriptCalls(deployment);
        const charges: Charges = new Map();
        let at = 0;
        for (let t = 0; at < ops.length; t++) {
          // One configuration per turn: decisions of two configurations are two batches, which Redis
          // runs in either order (as it would the calls of two processes); within one, in the order issued.
          const config = ops[at]!.config;
          const turn = ops.slice(at, at + sizes[t % sizes.length]!).map((op) => ({ ...op, config }));
          at += turn.length;
          const resets = turn.filter((op) => op.op === 'reset');
          const calls = turn.filter((op) => op.op !== 'reset');
          const expected: unknown[] = [];
          for (const op of calls) {
            const decision = await issueRate(memory, configs[op.config], op, op.now, charges);
            expected.push(decision === undefined ? undefined : plain(decision));
          }
          // The same calls, all in one turn (the charges they give back are the memory store's: the same when in parity).
          const actual = (
            await Promise.all(calls.map((op) => issueRate(redis, configs[op.config], op, op.now, charges)))
          ).map((d) => (d === undefined ? undefined : plain(d)));
          decisions += calls.length;
          expect(actual).toEqual(expected);
          for (const [i, op] of calls.entries()) {
            const d = expected[i] as { allowed?: boolean; at?: number; delayMs?: number } | undefined;
            if ((op.op === 'consume' || op.op === 'reserve') && d?.allowed === true)
              charges.set(op.key, [
                ...(charges.get(op.key) ?? []),
                { cost: Math.min(op.cost, configs[op.config].maxCost), at: d.at!, delay: d.delayMs! },
              ]);
          }
          for (const op of resets) {
            await memory.reset(op.key, configs[op.config]);
            await redis.reset(op.key, configs[op.config]);
          }
        }
        calls += (await scriptCalls(deployment)) - callsBefore;
        const end = ops[ops.length - 1]!.now;
        for (const key of ['a', 'b'])
          expect(plain(await redis.peek(key, configs[0], 0, end))).toEqual(
            plain(memory.peek(key, configs[0], 0, end) as Decision),
          );
        for (const node of deployment === 'standalone'
          ? [deployments.standalone]
          : deployments.clustered.nodes('master'))
          await expectAllKeysExpire(node, prefix);
        memory.close();
      }),
      { numRuns: 120 },
    );
    // Batches were made: fewer script calls than decisions.
    expect(calls).toBeLessThan(decisions);
  });

  it('concurrency leases: acquires, releases and peeks of one turn batched, each what it is alone', async () => {
    await fc.assert(
      fc.asyncProperty(
        leaseAlgorithms,
        timedSequence(leaseOps(false)),
        fc.integer({ min: 2, max: 8 }),
        async (algorithm: ConcurrencyAlgorithm, { start, ops }, size) => {
          const { memory, redis } = storesToCompare(client());
          // Every script loaded on the keys' nodes first (see warmUp), then those keys reset.
          for (const key of ['a', 'b']) {
            await redis.peek(key, algorithm, 0, start);
            await redis.acquire(key, algorithm, 'w', start);
            await redis.release(key, algorithm, 'w');
            await Promise.all([redis.peek(key, algorithm, 0, start), redis.peek(key, algorithm, 0, start)]);
            await redis.reset(key, algorithm);
          }
          for (let at = 0; at < ops.length; at += size) {
            const turn = ops.slice(at, at + size);
            const expected = await Promise.all(turn.map((op) => applyLeaseOp(memory, algorithm, op)));
            const actual = await Promise.all(turn.map((op) => applyLeaseOp(redis, algorithm, op)));
            expect(actual).toEqual(expected);
          }
          memory.close();
        },
      ),
      { numRuns: 80 },
    );
  });
});
