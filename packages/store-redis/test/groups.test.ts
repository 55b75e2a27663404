/**
 * A request's limits on one Redis store are decided in one script call, all-or-nothing (issue 26):
 * the store's `chargeAll` takes the charges the engine makes for one request and sends those of one
 * slot (every one, on a standalone Redis) as one group of the group script, which charges them in
 * order and, when an enforced one denies (or would hold the request too long), gives back in the same
 * script what the earlier ones took. With the defaults users get: batching on, the deny cache on,
 * Redis's clock. Script calls are counted by Redis itself (`INFO commandstats`).
 */
import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis5';
import { describe, expect, it, vi } from 'vitest';
import {
  combineLimiters,
  concurrency,
  createLimiter,
  fixedWindow,
  leakyBucket,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Duration,
  type Limiter,
  type Store,
} from '@rl/core';
import { UnsupportedError, type Charged, type IdempotentCharge, type TimedCharge } from '@rl/core/store';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import { everyRateAlgorithm, useRedisDeployments } from '@rl/test-support';
import calculateSlot from 'cluster-key-slot';
import { ALL } from './support/clients.js';

const redis = useRedisDeployments('groups');

/** Script calls Redis has run (EVALSHA and EVAL), over every master of the deployment. */
async function scriptCalls(nodes: readonly (Redis | Cluster)[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) {
    const info = (await node.info('commandstats')) as string;
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  }
  return calls;
}

type Deployment = 'standalone' | 'cluster';
const masters = (deployment: Deployment): (Redis | Cluster)[] =>
  deployment === 'standalone' ? [redis.standalone] : redis.clustered.nodes('master');
const clientOf = (deployment: Deployment): Redis | Cluster =>
  deployment === 'standalone' ? redis.standalone : redis.clustered;

/** A store of `deployment` with a fresh prefix, three limiters on it ({@link threeLimits}) and their combination. */
function combined(deployment: Deployment, limits: readonly [number, number, number]) {
  const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
  const limiters = threeLimits(store, limits);
  return { store, limiters, group: combineLimiters(limiters) };
}

/** Three limiters of three kinds on one store, under prefixes `a`, `b`, `c`. */
/**
 * A fixed window, a token bucket and a sliding log on `store`, each of `limits` per hour. `timeout`: the
 * limiters' store timeout (the default 50 ms unless given; a test of what a group decides gives more,
 * so that a loaded machine's slow answer is not read as the failure policy's).
 */
function threeLimits(
  store: Store,
  limits: readonly [number, number, number] = [100, 100, 100],
  timeout?: Duration,
): Limiter[] {
  const common = { store, ...(timeout === undefined ? {} : { timeout }) };
  return [
    createLimiter({ ...common, prefix: 'a', algorithm: fixedWindow({ limit: limits[0], window: '1h' }) }),
    createLimiter({
      ...common,
      prefix: 'b',
      algorithm: tokenBucket({ capacity: limits[1], refillRate: 1, interval: '1h' }),
    }),
    createLimiter({ ...common, prefix: 'c', algorithm: slidingWindowLog({ limit: limits[2], window: '1h' }) }),
  ];
}

describe('one script call per request', () => {
  it('3 limits on standalone Redis: 3.00 -> 1.00 script calls per request (batching and the deny cache on)', async () => {
    const store = new RedisStore({ client: redis.standalone, prefix: redis.freshPrefix() });
    // A timeout longer than the default 50 ms: on a machine loaded by the rest of the suite, a slow
    // answer would be the failure policy's decision, not a count of what a request sends.
    const group = combineLimiters(threeLimits(store, undefined, '2s'));
    // The first call of a script text is an EVALSHA answered NOSCRIPT, then its EVAL.
    await group.consume('warm');
    const before = await scriptCalls(masters('standalone'));
    const requests = 30;
    for (let i = 0; i < requests; i++) expect((await group.consume(`user${i}`)).allowed).toBe(true);
    expect(((await scriptCalls(masters('standalone'))) - before) / requests).toBe(1);
  });

  it('requests issued together share calls: 20 requests of 3 limits in one turn, batches of at most 16 decisions', async () => {
    const store = new RedisStore({ client: redis.standalone, prefix: redis.freshPrefix() });
    const group = combineLimiters(threeLimits(store, undefined, '2s'));
    // The first request of an idle store is sent at once, alone; the rest wait for the batch.
    await group.consume('warm');
    const before = await scriptCalls(masters('standalone'));
    const decisions = await Promise.all(Array.from({ length: 20 }, (_, i) => group.consume(`u${i}`)));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // The first is sent alone, at once; the other 19 groups (57 decisions) go in batches of at least 16.
    expect((await scriptCalls(masters('standalone'))) - before).toBe(1 + Math.ceil((19 * 3) / 16));
  });

  it('on a Cluster, limits whose keys share a slot go in one call; the others one call per slot', async () => {
    const store = new RedisStore({ client: redis.clustered, prefix: redis.freshPrefix() });
    const limiters = threeLimits(store);
    const group = combineLimiters(limiters);
    const slotsOf = (key: string) =>
      new Set(limiters.map((l, i) => calculateSlot(store.redisKeys(`${'abc'[i]}:${key}`, l.algorithm!)[0]!))).size;
    await group.consume('warm');
    // Keys whose limits land on one, two and three slots.
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'];
    for (const key of keys) {
      const before = await scriptCalls(masters('cluster'));
      expect((await group.consume(key)).allowed).toBe(true);
      expect([key, (await scriptCalls(masters('cluster'))) - before]).toEqual([key, slotsOf(key)]);
    }
    // A key that names a hash tag puts every limit of it in the tag's slot: one call (after a first
    // request of the tag, which loads the script of the three on that slot's node: NOSCRIPT, then EVAL).
    for (const tag of ['user:1', 'user:2', 'user:3']) {
      await group.consume(`{${tag}}`);
      const key = `x{${tag}}y`;
      expect(slotsOf(key)).toBe(1);
      const before = await scriptCalls(masters('cluster'));
      expect((await group.consume(key)).allowed).toBe(true);
      expect((await scriptCalls(masters('cluster'))) - before).toBe(1);
    }
  });
});

describe.each(['standalone', 'cluster'] as const)('all-or-nothing on %s Redis', (deployment) => {
  it('a denial by the last limit charges none of the others', async () => {
    const { limiters, group } = combined(deployment, [5, 5, 1]);
    expect((await group.consume('k')).allowed).toBe(true);
    const d = await group.consume('k');
    expect([d.allowed, d.deniedBy, d.decisions.map((x) => x?.allowed)]).toEqual([false, 2, [true, true, false]]);
    // The denial is remembered (the deny cache): the next requests are denied before anything is charged.
    for (let i = 0; i < 3; i++) {
      const again = await group.consume('k');
      expect([again.allowed, again.deniedBy]).toEqual([false, 2]);
    }
    expect(await Promise.all(limiters.map(async (l) => (await l.peek('k')).remaining))).toEqual([4, 4, 0]);
  });

  it('a denial in a group is remembered by its limit\u2019s deny cache: the next request is denied before anything is charged', async () => {
    const { group } = combined(deployment, [5, 5, 1]);
    // The cache subscribes to the store's resets at its first denial, and keeps nothing until that is live.
    await group.consume('warm');
    let warm = await group.consume('warm');
    for (let i = 0; i < 200 && warm.reason !== 'deny-cache'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      warm = await group.consume('warm');
    }
    expect(warm.reason).toBe('deny-cache');
    expect((await group.consume('k')).allowed).toBe(true);
    const denied = await group.consume('k');
    expect([denied.deniedBy, denied.reason]).toEqual([2, undefined]);
    const calls = await scriptCalls(masters(deployment));
    const again = await group.consume('k');
    expect([again.allowed, again.deniedBy, again.reason]).toEqual([false, 2, 'deny-cache']);
    expect((await scriptCalls(masters(deployment))) - calls).toBe(0);
  });

  it('a denial by the first: the later limits are not asked, and their decisions are absent', async () => {
    const { limiters, group } = combined(deployment, [1, 5, 5]);
    await group.consume('k');
    const d = await group.consume('k');
    expect([d.allowed, d.deniedBy, d.decisions.length, d.decisions[1], d.decisions[2]]).toEqual([
      false,
      0,
      3,
      undefined,
      undefined,
    ]);
    expect(await Promise.all(limiters.map(async (l) => (await l.peek('k')).remaining))).toEqual([0, 4, 4]);
  });

  it('reservations (wait): a reservation denied by one limit cancels the others\u2019 in the same step', async () => {
    const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
    const roomy = tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' });
    const slow = tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' });
    const reserve = () =>
      Promise.all(
        store.chargeAll(
          [
            { charge: { key: 'r:{k}', algorithm: roomy, cost: 1, maxDelayMs: 1000 }, now: undefined },
            { charge: { key: 's:{k}', algorithm: slow, cost: 1, maxDelayMs: 1000 }, now: undefined },
          ],
          { holdMs: 1000 },
        ),
      );
    expect((await reserve()).map((c) => c.decision.allowed)).toEqual([true, true]);
    // `slow`'s next unit is an hour away, beyond the second of maxDelay: denied, and `roomy`'s reservation given back.
    const second = await reserve();
    expect(second.map((c) => [c.decision.allowed, c.took])).toEqual([
      [true, 'rolled-back'],
      [false, 'charged'],
    ]);
    expect((await store.peek('r:{k}', roomy, 1, undefined)).remaining).toBe(8);
  });
});

describe.each(['standalone', 'cluster'] as const)(
  'the store\u2019s charges together on %s Redis (Store.chargeAll)',
  (deployment) => {
    /** The answers to one request's charges, decided together with a hold of `holdMs`; `enforced` false for a dry-run one. */
    function together(
      store: RedisStore,
      holdMs: number,
      charges: readonly [string, Algorithm, boolean][],
    ): Promise<Charged[]> {
      return Promise.all(
        store.chargeAll(
          charges.map(([key, algorithm, enforced]) => ({
            charge: { key, algorithm, cost: 1, enforced },
            now: undefined,
          })),
          { holdMs },
        ),
      );
    }
    // Keys that name one hash tag: one slot on a Cluster, so the group is one call there too.
    const hashTagged = (key: string) => `${key}:{t}`;

    it('an enforced consume held longer than holdMs: every consume of the group is given back in the same step', async () => {
      const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
      const shaper = leakyBucket({ capacity: 5, leakRate: 1, interval: '1s', mode: 'shape' });
      const window = fixedWindow({ limit: 5, window: '1h' });
      const first = await together(store, 0, [
        [hashTagged('s'), shaper, true],
        [hashTagged('w'), window, true],
      ]);
      expect(first.map((c) => [c.decision.allowed, c.decision.delayMs, c.took])).toEqual([
        [true, 0, 'charged'],
        [true, 0, 'charged'],
      ]);
      // The shaper's next slot is a second away: more than a hold of 0.
      const second = await together(store, 0, [
        [hashTagged('s'), shaper, true],
        [hashTagged('w'), window, true],
      ]);
      expect(second.map((c) => c.decision.allowed)).toEqual([true, true]);
      expect(second.map((c) => c.took)).toEqual(['rolled-back', 'rolled-back']);
      expect((await store.peek(hashTagged('w'), window, 1, undefined)).remaining).toBe(3);
    });

    it('a dry-run consume that denies does not stop the group: the others are charged', async () => {
      const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
      const tight = fixedWindow({ limit: 1, window: '1h' });
      const roomy = fixedWindow({ limit: 5, window: '1h' });
      await together(store, Infinity, [[hashTagged('d'), tight, false]]);
      const answers = await together(store, Infinity, [
        [hashTagged('d'), tight, false],
        [hashTagged('e'), roomy, true],
      ]);
      expect(answers.map((c) => [c.decision.allowed, c.took])).toEqual([
        [false, 'charged'],
        [true, 'charged'],
      ]);
      expect((await store.peek(hashTagged('e'), roomy, 1, undefined)).remaining).toBe(3);
    });
  },
);

describe.each(['standalone', 'cluster'] as const)(
  'idempotent charges together on %s Redis (Store.chargeAll)',
  (deployment) => {
    const hashTagged = (key: string) => `${key}:{i}`;
    /** An idempotent charge of `id` (digests of 16 and 8 characters, as `idempotentCharge` makes them). */
    const idempotent = (id: string, fingerprint = 'print-01'): IdempotentCharge => ({
      id: id.padEnd(16, '-'),
      fingerprint,
      ttlMs: 60_000,
      maxIds: 5,
      maxReplays: 3,
    });

    it('replayed together; a charge rolled back forgets its id, a conflict rolled back keeps the first request\u2019s record; keys of their own send their ids\u2019 key', async () => {
      const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
      // A field of a bucket hash, keys of their own (the `:idem` key: one key more per call), then a plain charge after them.
      const window = fixedWindow({ limit: 5, window: '1h' });
      const log = slidingWindowLog({ limit: 1, window: '1h' });
      const bucket = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });
      const request = (windowId: IdempotentCharge, logId: IdempotentCharge) =>
        Promise.all(
          store.chargeAll(
            [
              { charge: { key: hashTagged('w'), algorithm: window, cost: 1, idempotency: windowId }, now: undefined },
              { charge: { key: hashTagged('l'), algorithm: log, cost: 1, idempotency: logId }, now: undefined },
              { charge: { key: hashTagged('b'), algorithm: bucket, cost: 1 }, now: undefined },
            ],
            { holdMs: Infinity },
          ),
        );
      const view = (answers: Charged[]) =>
        answers.map((c) => [c.decision.allowed, c.took, c.conflict === true, c.idempotencyId]);
      const first = idempotent('first');
      expect(view(await request(first, first))).toEqual([
        [true, 'charged', false, first.id],
        [true, 'charged', false, first.id],
        [true, 'charged', false, undefined],
      ]);
      // The retry: both idempotent charges answered again, the plain one charged.
      expect(view(await request(first, first))).toEqual([
        [true, 'replayed', false, undefined],
        [true, 'replayed', false, undefined],
        [true, 'charged', false, undefined],
      ]);
      // A new id: the log (limit 1) denies, the window's charge is rolled back with its id forgotten, the bucket is not asked.
      const second = idempotent('second');
      expect(view(await request(second, second))).toEqual([
        [true, 'rolled-back', false, undefined],
        [false, 'charged', false, undefined],
        [false, 'not-asked', false, undefined],
      ]);
      const alone = async (id: IdempotentCharge) =>
        store.charge({ key: hashTagged('w'), algorithm: window, cost: 1, idempotency: id }, undefined);
      // Decided afresh: not a replay of the rolled-back charge.
      expect(view([await alone(second)])).toEqual([[true, 'charged', false, second.id]]);
      // The first id with another fingerprint: a conflict, rolled back as a plain charge; the first request's record stays.
      expect(view(await request(idempotent('first', 'print-02'), second))).toEqual([
        [true, 'rolled-back', true, undefined],
        [false, 'charged', false, undefined],
        [false, 'not-asked', false, undefined],
      ]);
      expect(view([await alone(first)])).toEqual([[true, 'replayed', false, undefined]]);
      // Charged: the first request and `second` alone; the bucket twice.
      expect((await store.peek(hashTagged('w'), window, 0, undefined)).remaining).toBe(3);
      expect((await store.peek(hashTagged('b'), bucket, 0, undefined)).remaining).toBe(3);
    });

    it('each answer settles on its own: a malformed idempotent charge and a lease limit\u2019s answer alone, the others decided together; a closed store rejects each', async () => {
      const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
      const window = fixedWindow({ limit: 1, window: '1h' });
      const permits = concurrency({ limit: 2 });
      const malformed: IdempotentCharge = {
        id: 'short',
        fingerprint: 'short',
        ttlMs: 60_000,
        maxIds: 5,
        maxReplays: 3,
      };
      const charges = (): TimedCharge[] => [
        { charge: { key: hashTagged('a'), algorithm: window, cost: 1 }, now: undefined },
        { charge: { key: hashTagged('m'), algorithm: window, cost: 1, idempotency: malformed }, now: undefined },
        { charge: { key: hashTagged('p'), algorithm: permits, cost: 1 }, now: undefined },
        { charge: { key: hashTagged('b'), algorithm: window, cost: 1 }, now: undefined },
      ];
      const settled = await Promise.allSettled(store.chargeAll(charges(), { holdMs: Infinity }));
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(UnsupportedError);
      // The lease limit reports its state (a peek, as `charge` does): nothing taken.
      expect(
        settled.map((s) =>
          s.status === 'fulfilled' ? [s.value.decision.allowed, s.value.decision.remaining, s.value.took] : s.status,
        ),
      ).toEqual([[true, 0, 'charged'], 'rejected', [true, 2, 'charged'], [true, 0, 'charged']]);
      // Decided together: the first, now exhausted, denies, and the later ones are not asked.
      const denied = await Promise.all(
        store.chargeAll(
          [
            charges()[0]!,
            { charge: { key: hashTagged('c'), algorithm: window, cost: 1 }, now: undefined },
            charges()[3]!,
          ],
          { holdMs: Infinity },
        ),
      );
      expect(denied.map((c) => c.took)).toEqual(['charged', 'not-asked', 'not-asked']);
      await store.close();
      const closed = await Promise.allSettled(store.chargeAll(charges(), { holdMs: Infinity }));
      expect(closed.map((s) => s.status === 'rejected' && (s.reason as { code?: string }).code)).toEqual([
        'RL_STORE_CLOSED',
        'RL_STORE_CLOSED',
        'RL_STORE_CLOSED',
        'RL_STORE_CLOSED',
      ]);
    });
  },
);

describe.each(['standalone', 'cluster'] as const)('faults on %s Redis', (deployment) => {
  it('after SCRIPT FLUSH the group script is loaded again (EVAL on NOSCRIPT), and decides as before', async () => {
    const { limiters, group } = combined(deployment, [3, 3, 3]);
    expect((await group.consume('{k}')).allowed).toBe(true);
    for (const node of masters(deployment)) await node.script('FLUSH');
    expect((await group.consume('{k}')).allowed).toBe(true);
    expect(await Promise.all(limiters.map(async (l) => (await l.peek('{k}')).remaining))).toEqual([1, 1, 1]);
  });
});

describe.each(
  ALL.flatMap((kind) =>
    (['standalone', 'cluster'] as const).map((deployment) => ({
      kind,
      deployment,
      name: `${deployment} Redis, ${kind.name}`,
    })),
  ),
)('every client on $name', ({ kind, deployment }) => {
  it('a request of three limits is decided in one group, and a denial by the last charges none', async () => {
    const client = deployment === 'standalone' ? await kind.standalone(redis.url) : await kind.cluster(redis.nodes);
    try {
      const store = new RedisStore({ client, prefix: redis.freshPrefix() });
      // What the store answered the engine: the first two limits rolled back in the group's own step.
      const chargeAll = vi.spyOn(store, 'chargeAll');
      const limiters = threeLimits(store, [5, 5, 1], '5s');
      const group = combineLimiters(limiters);
      // One hash tag: one slot on the Cluster, so one group there too.
      expect((await group.consume('{k}')).allowed).toBe(true);
      const denied = await group.consume('{k}');
      expect([denied.allowed, denied.deniedBy, denied.decisions.map((d) => d?.allowed)]).toEqual([
        false,
        2,
        [true, true, false],
      ]);
      const answers = await Promise.all(chargeAll.mock.results.at(-1)!.value as readonly Promise<Charged>[]);
      expect(answers.slice(0, 2).map((c) => c.took)).toEqual(['rolled-back', 'rolled-back']);
      expect(await Promise.all(limiters.map(async (l) => (await l.peek('{k}')).remaining))).toEqual([4, 4, 0]);
    } finally {
      await kind.close(client);
    }
  });
});

describe('a group with nothing to send', () => {
  it('a memory-store limit that denies first: the Redis limits are not asked, and the store takes consumes alone again', async () => {
    const store = new RedisStore({ client: redis.standalone, prefix: redis.freshPrefix() });
    const local = createLimiter({
      store: new MemoryStore({ sweepInterval: false }),
      prefix: 'm',
      algorithm: fixedWindow({ limit: 1, window: '1h' }),
    });
    const [a, b] = threeLimits(store);
    const group = combineLimiters([local, a!, b!]);
    expect((await group.consume('k')).allowed).toBe(true);
    // `local` denies at once: the Redis limits are not asked (no charge of theirs is sent).
    const denied = await group.consume('k');
    expect([denied.allowed, denied.deniedBy]).toEqual([false, 0]);
    // The store is left as it was: a consume of its own is sent and answered.
    expect((await a!.consume('other')).allowed).toBe(true);
    expect((await a!.peek('k')).remaining).toBe(99);
  });
});

describe('no wrong denial from another request\u2019s give-back', () => {
  it('two requests in one turn: one denied by its own limit, the other admitted by the limit they share', async () => {
    const store = new RedisStore({ client: redis.standalone, prefix: redis.freshPrefix() });
    // `shared` has room for one request; `own` is exhausted for y, fresh for z.
    const shared = createLimiter({ store, prefix: 'shared', algorithm: fixedWindow({ limit: 1, window: '1h' }) });
    const own = createLimiter({ store, prefix: 'own', algorithm: fixedWindow({ limit: 1, window: '1h' }) });
    await own.consume('y');
    const group = combineLimiters([shared, own]);
    await group.consume(['warm', 'warm']);
    // Charged one after another, the first request's charge of `shared` (given back only after `own`
    // denies it) would deny the second; decided together, the first takes nothing.
    const [first, second] = await Promise.all([group.consume(['x', 'y']), group.consume(['x', 'z'])]);
    expect([first.allowed, first.deniedBy]).toEqual([false, 1]);
    expect(second.allowed).toBe(true);
  });
});

describe('parity with the engine charging one limit after another (the memory store)', () => {
  // Every rate algorithm of the kind suites (each kind's samples), of a size the property picks.
  const kinds = everyRateAlgorithm(3).length;
  const algorithmOf = (kind: number, size: number): Algorithm => everyRateAlgorithm(size)[kind]!;
  const limitArb = fc.record({ kind: fc.integer({ min: 0, max: kinds - 1 }), size: fc.integer({ min: 3, max: 6 }) });
  const requestArb = fc.record({
    keys: fc.array(fc.constantFrom('p', 'q'), { minLength: 3, maxLength: 3 }),
    cost: fc.integer({ min: 1, max: 3 }),
    advanceMs: fc.integer({ min: 0, max: 1500 }),
  });

  const cases = (['standalone', 'cluster'] as const).flatMap((deployment) => [
    { deployment, denyCache: false, name: `${deployment} Redis, without the deny cache` },
    { deployment, denyCache: true, name: `${deployment} Redis, with the deny cache (the default)` },
  ]);
  it.each(cases)('the same combined decisions on $name, request after request', async ({ deployment, denyCache }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(limitArb, { minLength: 3, maxLength: 3 }),
        fc.array(requestArb, { minLength: 1, maxLength: 25 }),
        async (limits, requests) => {
          let now = 1_800_000_000_000;
          const clock = (): number => now;
          const build = (store: Store, cache: boolean) =>
            combineLimiters(
              limits.map((l, i) =>
                createLimiter({
                  store,
                  clock,
                  prefix: `l${i}`,
                  algorithm: algorithmOf(l.kind, l.size),
                  // The decisions are compared, not the store's speed: a call slower than the default 50 ms
                  // (a loaded machine) would get the failure policy's answer instead.
                  timeout: false,
                  ...(cache ? {} : { denyCache: false }),
                }),
              ),
            );
          const memory = build(new MemoryStore({ sweepInterval: false }), false);
          const remote = build(
            new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() }),
            denyCache,
          );
          for (const r of requests) {
            now += r.advanceMs;
            const [m, d] = [await memory.consume(r.keys, r.cost), await remote.consume(r.keys, r.cost)];
            const view = (x: typeof m) => [
              x.allowed,
              x.deniedBy,
              x.remaining,
              x.retryAfterMs,
              x.decisions.map((y) => y && [y.allowed, y.remaining]),
            ];
            expect(d.allowed).toBe(m.allowed);
            // A denial the deny cache remembers denies before anything is charged: by that limit, even
            // where an earlier one would have denied too (which the engine charging one after another reports).
            if (d.decisions[d.deniedBy]?.reason === 'deny-cache')
              expect(m.decisions[d.deniedBy]?.allowed).not.toBe(true);
            else expect(view(d)).toEqual(view(m));
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe.each(['standalone', 'cluster'] as const)('a leased limit beside a group on %s Redis', (deployment) => {
  it('the leased limit is charged after the group (its blocks join no group); a denial by the group gives nothing to the block, a denial by the leased limit gives the group back', async () => {
    const store = new RedisStore({ client: clientOf(deployment), prefix: redis.freshPrefix() });
    const clock = () => 1_800_000_000_000;
    // On a Cluster the keys name one hash tag: the two grouped limits share a slot.
    const grouped = [
      createLimiter({ store, clock, prefix: 'a', algorithm: fixedWindow({ limit: 100, window: '1h' }) }),
      createLimiter({ store, clock, prefix: 'b', algorithm: slidingWindowLog({ limit: 3, window: '1h' }) }),
    ];
    const leased = createLimiter({
      store,
      clock,
      prefix: 'g',
      algorithm: fixedWindow({ limit: 4, window: '1h' }),
      lease: { units: 2 },
    });
    const group = combineLimiters([...grouped, leased]);
    const keys = ['{u}', '{u}', 'global'];
    const before = await scriptCalls(masters(deployment));
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await group.consume(keys));
    // Three admitted (b binds at 3), then b denies: the leased limit is not asked.
    expect(decisions.map((d) => [d.allowed, d.deniedBy])).toEqual([
      [true, -1],
      [true, -1],
      [true, -1],
      [false, 1],
      [false, 1],
    ]);
    // A group call per request, the fifth included (b's denial in the fourth is not kept by the deny
    // cache: its first denial opens the store's subscription to notices, and the cache forgets what it
    // held before), and the leased limit's blocks of 2 (the second asked at half a block left).
    expect((await scriptCalls(masters(deployment))) - before).toBe(8);
    expect((await grouped[0]!.peek('{u}')).remaining).toBe(97);
    // The leased global limit holds 4 units (two blocks), one of them unspent.
    expect((await leased.peek('global')).remaining).toBe(0);
    await leased.close();
    expect((await leased.peek('global')).remaining).toBe(1);
    // Another user: the group admits both; the leased limit admits the last unit alone, then denies, and the group's charges go back.
    const other = ['{v}', '{v}', 'global'];
    expect([(await group.consume(other)).allowed, (await group.consume(other)).deniedBy]).toEqual([true, 2]);
    expect((await grouped[0]!.peek('{v}')).remaining).toBe(99);
    expect((await grouped[1]!.peek('{v}')).remaining).toBe(2);
  });
});
