import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import type { Duration } from '../../duration.js';
import type { Limiter, LimiterOptions } from '../../limiter/index.js';
import { HeardIdempotency } from './heard.js';
import { gatedIt, limiterWith, rateSamples, runsAll, samplesFor, type Suite } from './suite.js';

/**
 * Idempotent charges (`consume(key, cost, { idempotencyKey })`, on a store that declares
 * `capabilities.idempotency`): a retry with the same id and fingerprint, within the ttl, gets the
 * earlier admitting decision back and is charged nothing; a denial is never remembered; an id of
 * another fingerprint is charged as new, a conflict; a give-back forgets the id; a key remembers at most
 * `idempotencyMaxIds` ids; an id replays at most `idempotencyMaxReplays` times, then its retry is
 * charged as new (and remembered afresh when admitted); a ban or a lockout outranks a replay. A
 * replay or a conflict is read from the limiter's observer (`DecisionEvent.idempotency`), as the
 * store's answer (`Charged.took`, `Charged.conflict`) reaches it: see {@link HeardIdempotency}.
 */
export function describeIdempotency(suite: Suite): void {
  const remembers = (): boolean => suite.store.capabilities.idempotency === true;
  const limiterOf = (
    algorithm: LimiterOptions['algorithm'],
    clock: () => number,
    options: Partial<LimiterOptions> = {},
  ) => limiterWith(suite, 'idem', { algorithm, clock, denyCache: false, ...options });

  /** A limiter as `limiterOf` makes it, whose observer hears what its idempotent charges were (`heard`). */
  const heardLimiter = (
    algorithm: LimiterOptions['algorithm'],
    clock: () => number,
    options: Partial<LimiterOptions> = {},
  ) => {
    const heard = new HeardIdempotency();
    return { heard, limiter: limiterOf(algorithm, clock, { observer: heard.observer, ...options }) };
  };

  /**
   * A test on a store that remembers ids, of a fixed window of `limit` per `window` on a limiter as
   * `heardLimiter` makes it (with `options`): `body` gets the limiter, what it heard and its clock, at
   * `start` (ms) until the test sets `clock.now`.
   */
  const onFixedWindow = (
    name: string,
    setup: { limit: number; window: Duration; start: number; options?: Partial<LimiterOptions> },
    body: (test: { heard: HeardIdempotency; limiter: Limiter; clock: { now: number } }) => Promise<void>,
  ) =>
    gatedIt(
      name,
      () => remembers() && runsAll(suite.store, ['fixed-window']),
      () => {
        const clock = { now: setup.start };
        const algorithm = fixedWindow({ limit: setup.limit, window: setup.window });
        return body({ clock, ...heardLimiter(algorithm, () => clock.now, setup.options) });
      },
    );

  describe('idempotent charges', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: 5 retries of one request (the default bound) are charged once, and answered with its decision (its at, allowed, the numbers of now); another id is charged`,
        () => remembers() && runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 10_000;
          const { heard, limiter } = heardLimiter(sample.make(100, 60_000), () => now);
          const first = await limiter.consume('k', 2, { idempotencyKey: 'order-1' });
          expect([first.allowed, first.remaining, heard.replayed()]).toEqual([true, 98, false]);
          for (let i = 0; i < 5; i++) {
            now += 1;
            const retry = await limiter.consume('k', 2, { idempotencyKey: 'order-1' });
            expect([retry.allowed, retry.remaining, retry.at, heard.replayed()]).toEqual([true, 98, first.at, true]);
          }
          const other = await limiter.consume('k', 2, { idempotencyKey: 'order-2' });
          expect([other.remaining, heard.replayed()]).toEqual([96, false]);
          expect((await limiter.peek('k')).remaining).toBe(96);
        },
      );
    }

    onFixedWindow(
      'a denial is never remembered: a retry of a denied request is decided afresh, and charged once admitted',
      { limit: 1, window: '1m', start: 60_000 },
      async ({ heard, limiter, clock }) => {
        await limiter.consume('k');
        const denied = await limiter.consume('k', 1, { idempotencyKey: 'late' });
        expect([denied.allowed, heard.replayed()]).toEqual([false, false]);
        expect((await limiter.consume('k', 1, { idempotencyKey: 'late' })).allowed).toBe(false);
        clock.now = 120_000;
        const admitted = await limiter.consume('k', 1, { idempotencyKey: 'late' });
        expect([admitted.allowed, heard.replayed(), admitted.remaining]).toEqual([true, false, 0]);
        await limiter.consume('k', 1, { idempotencyKey: 'late' });
        expect(heard.replayed()).toBe(true);
      },
    );

    onFixedWindow(
      'an id reused with another fingerprint is charged as new, a conflict; a retry of the first still gets its decision',
      { limit: 10, window: '1h', start: 1_000 },
      async ({ heard, limiter }) => {
        await limiter.consume('k', 1, { idempotencyKey: 'x', fingerprint: 'POST /orders 1' });
        const reused = await limiter.consume('k', 1, { idempotencyKey: 'x', fingerprint: 'DELETE /orders 1' });
        const said = heard.latest();
        expect([reused.allowed, reused.remaining, said === 'conflict', said === 'replayed']).toEqual([
          true,
          8,
          true,
          false,
        ]);
        const again = await limiter.consume('k', 1, { idempotencyKey: 'x', fingerprint: 'POST /orders 1' });
        expect([again.remaining, heard.replayed()]).toEqual([8, true]);
        // The default fingerprint is the cost: a retry of another cost is another request.
        await limiter.consume('k', 1, { idempotencyKey: 'y' });
        await limiter.consume('k', 3, { idempotencyKey: 'y' });
        expect(heard.latest()).toBe('conflict');
      },
    );

    onFixedWindow(
      'after idempotencyTtl a retry is charged; a give-back forgets the id (its retry is charged); reset forgets every id',
      { limit: 100, window: '1h', start: 3_600_000, options: { idempotencyTtl: '1s' } },
      async ({ heard, limiter, clock }) => {
        await limiter.consume('k', 1, { idempotencyKey: 'a' });
        clock.now += 999;
        await limiter.consume('k', 1, { idempotencyKey: 'a' });
        expect(heard.replayed()).toBe(true);
        clock.now += 1;
        await limiter.consume('k', 1, { idempotencyKey: 'a' });
        expect(heard.replayed()).toBe(false);
        expect((await limiter.peek('k')).remaining).toBe(98);
        const given = await limiter.consume('k', 1, { idempotencyKey: 'b' });
        await limiter.undo('k', 1, given);
        await limiter.consume('k', 1, { idempotencyKey: 'b' });
        expect(heard.replayed()).toBe(false);
        await limiter.reset('k');
        await limiter.consume('k', 1, { idempotencyKey: 'b' });
        expect(heard.replayed()).toBe(false);
        expect((await limiter.peek('k')).remaining).toBe(99);
      },
    );

    onFixedWindow(
      'a key remembers at most idempotencyMaxIds ids: the oldest is forgotten first',
      { limit: 100, window: '1h', start: 5_000, options: { idempotencyMaxIds: 3 } },
      async ({ heard, limiter, clock }) => {
        for (const id of ['1', '2', '3', '4']) {
          clock.now += 1;
          await limiter.consume('k', 1, { idempotencyKey: id });
        }
        await limiter.consume('k', 1, { idempotencyKey: '4' });
        expect(heard.replayed()).toBe(true);
        await limiter.consume('k', 1, { idempotencyKey: '2' });
        expect(heard.replayed()).toBe(true);
        await limiter.consume('k', 1, { idempotencyKey: '1' });
        expect(heard.replayed()).toBe(false);
        expect((await limiter.peek('k')).remaining).toBe(95);
      },
    );

    onFixedWindow(
      "a give-back of a replay gives nothing back and keeps the record; a give-back of a conflict keeps the first request's record",
      { limit: 10, window: '1h', start: 1_000 },
      async ({ heard, limiter }) => {
        await limiter.consume('b', 3, { idempotencyKey: 'Y' });
        const replay = await limiter.consume('b', 3, { idempotencyKey: 'Y' });
        await limiter.undo('b', 3, replay);
        expect((await limiter.peek('b')).remaining).toBe(7);
        await limiter.consume('b', 3, { idempotencyKey: 'Y' });
        expect(heard.replayed()).toBe(true);
        await limiter.consume('a', 1, { idempotencyKey: 'X', fingerprint: 'POST /orders' });
        const conflict = await limiter.consume('a', 1, { idempotencyKey: 'X', fingerprint: 'DELETE /orders' });
        await limiter.undo('a', 1, conflict);
        await limiter.consume('a', 1, { idempotencyKey: 'X', fingerprint: 'POST /orders' });
        expect(heard.replayed()).toBe(true);
        expect((await limiter.peek('a')).remaining).toBe(9);
      },
    );

    onFixedWindow(
      'with a quota lease: an idempotent charge goes to the store, and its give-back forgets the id there (never into a block)',
      { limit: 20, window: '1h', start: 5_000, options: { lease: { units: 10, ttl: '10s' } } },
      async ({ heard, limiter }) => {
        await limiter.consume('k');
        const charged = await limiter.consume('k', 1, { idempotencyKey: 'A' });
        await limiter.undo('k', 1, charged);
        await limiter.consume('k', 1, { idempotencyKey: 'A' });
        expect(heard.replayed()).toBe(false);
        let admitted = 2;
        for (let i = 0; i < 30; i++) if ((await limiter.consume('k')).allowed) admitted++;
        expect(admitted).toBe(20);
        await limiter.close();
      },
    );

    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: an id replays idempotencyMaxReplays times; its next retry is charged as new and remembered afresh (its own retries replay again)`,
        () => remembers() && runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 10_000;
          const { heard, limiter } = heardLimiter(sample.make(100, 60_000), () => now, { idempotencyMaxReplays: 2 });
          const first = await limiter.consume('k', 1, { idempotencyKey: 'A' });
          const seen: [boolean, boolean, number][] = [[first.allowed, heard.replayed(), first.remaining]];
          for (let i = 0; i < 6; i++) {
            now += 1;
            const retry = await limiter.consume('k', 1, { idempotencyKey: 'A' });
            seen.push([retry.allowed, heard.replayed(), retry.remaining]);
          }
          expect(seen).toEqual([
            [true, false, 99],
            [true, true, 99],
            [true, true, 99],
            [true, false, 98],
            [true, true, 98],
            [true, true, 98],
            [true, false, 97],
          ]);
        },
      );
    }

    onFixedWindow(
      'by default an id replays 5 times: the 7th request with it is charged',
      { limit: 100, window: '1h', start: 1_000 },
      async ({ heard, limiter }) => {
        const replayed: boolean[] = [];
        for (let i = 0; i < 13; i++) {
          await limiter.consume('k', 1, { idempotencyKey: 'order-1' });
          replayed.push(heard.replayed());
        }
        expect(replayed).toEqual([false, true, true, true, true, true, false, true, true, true, true, true, false]);
        expect((await limiter.peek('k')).remaining).toBe(97);
      },
    );

    onFixedWindow(
      'a retry past the bound that is denied is not remembered: the spent record stays, and each later retry is decided afresh until one is admitted',
      { limit: 2, window: '1m', start: 60_000, options: { idempotencyMaxReplays: 1 } },
      async ({ heard, limiter, clock }) => {
        expect((await limiter.consume('k', 1, { idempotencyKey: 'A' })).allowed).toBe(true);
        expect((await limiter.consume('k')).allowed).toBe(true);
        await limiter.consume('k', 1, { idempotencyKey: 'A' });
        expect(heard.replayed()).toBe(true);
        for (let i = 0; i < 2; i++) {
          const spent = await limiter.consume('k', 1, { idempotencyKey: 'A' });
          const said = heard.latest();
          expect([spent.allowed, said === 'replayed', said === 'conflict']).toEqual([false, false, false]);
        }
        clock.now = 120_000;
        const charged = await limiter.consume('k', 1, { idempotencyKey: 'A' });
        expect([charged.allowed, heard.replayed(), charged.remaining]).toEqual([true, false, 1]);
        const replay = await limiter.consume('k', 1, { idempotencyKey: 'A' });
        expect([replay.allowed, heard.replayed(), replay.at]).toEqual([true, true, charged.at]);
      },
    );

    gatedIt(
      'property: whatever the requests, ids, bans, unbans and lockouts, no request is admitted while its key is blocked, and an id replays exactly while its record has replays left',
      () =>
        remembers() &&
        suite.store.capabilities.bans === true &&
        suite.store.capabilities.blocks === true &&
        samplesFor(suite.store).length > 0,
      async () => {
        const samples = samplesFor(suite.store);
        const op = fc.oneof(
          {
            weight: 6,
            arbitrary: fc.record({
              kind: fc.constant('consume' as const),
              id: fc.constantFrom('a', 'b', 'c', undefined),
              cost: fc.constantFrom(1, 1, 1, 2),
              dt: fc.integer({ min: 0, max: 3_000 }),
            }),
          },
          {
            weight: 1,
            arbitrary: fc.record({
              kind: fc.constant('ban' as const),
              ms: fc.integer({ min: 1, max: 20_000 }),
              dt: fc.integer({ min: 0, max: 3_000 }),
            }),
          },
          {
            weight: 1,
            arbitrary: fc.record({ kind: fc.constant('unban' as const), dt: fc.integer({ min: 0, max: 3_000 }) }),
          },
        );
        await fc.assert(
          fc.asyncProperty(
            fc.integer({ min: 0, max: samples.length - 1 }),
            fc.constantFrom(0, 0, 5_000),
            fc.integer({ min: 1, max: 4 }),
            fc.array(op, { minLength: 1, maxLength: 30 }),
            async (which, blockMs, maxReplays, ops) => {
              let now = 10_000;
              const { heard, limiter } = heardLimiter(samples[which]!.make(3, 10_000), () => now, {
                bans: true,
                idempotencyMaxReplays: maxReplays,
                idempotencyTtl: '1h',
                ...(blockMs > 0 && { blockDuration: blockMs }),
              });
              /** The model: when the key's block ends, whether it is a ban, and each id's fingerprint (its cost) and replays since it was charged. */
              let blockedUntil = -Infinity;
              let banned = false;
              const records = new Map<string, { cost: number; replays: number }>();
              for (const o of ops) {
                now += o.dt;
                if (o.kind === 'ban') {
                  await limiter.block('k', o.ms);
                  [blockedUntil, banned] = [now + o.ms, true];
                } else if (o.kind === 'unban') {
                  await limiter.unblock('k');
                  blockedUntil = -Infinity;
                } else {
                  const d = await limiter.consume(
                    'k',
                    o.cost,
                    o.id === undefined ? undefined : { idempotencyKey: o.id },
                  );
                  const blocked = now < blockedUntil;
                  const record = o.id === undefined ? undefined : records.get(o.id);
                  const replays =
                    !blocked && record !== undefined && record.cost === o.cost && record.replays < maxReplays;
                  const said = heard.latest();
                  expect({
                    allowed: d.allowed && blocked,
                    reason: d.reason,
                    replayed: said === 'replayed',
                    conflict: said === 'conflict',
                  }).toEqual({
                    allowed: false,
                    reason: blocked && banned ? 'blocked' : undefined,
                    replayed: replays,
                    conflict: !blocked && record !== undefined && record.cost !== o.cost,
                  });
                  if (replays) {
                    expect(d.allowed).toBe(true);
                    record!.replays++;
                  } else if (
                    !blocked &&
                    d.allowed &&
                    o.id !== undefined &&
                    (record === undefined || record.cost === o.cost)
                  ) {
                    records.set(o.id, { cost: o.cost, replays: 0 });
                  } else if (!blocked && !d.allowed && blockMs > 0) {
                    [blockedUntil, banned] = [now + blockMs, false];
                  }
                }
              }
            },
          ),
          { numRuns: suite.runs },
        );
      },
    );

    gatedIt(
      'a reservation retried gets its slot back, less the time passed, and queues nothing more',
      () => remembers() && suite.store.capabilities.reservations === true && runsAll(suite.store, ['token-bucket']),
      async () => {
        let now = 7_000;
        const { heard, limiter } = heardLimiter(tokenBucket({ capacity: 1, refillRate: 1 }), () => now);
        await limiter.consume('k');
        const first = await limiter.reserve('k', 1, { maxDelay: '1s', idempotencyKey: 'r' });
        expect([first.allowed, first.delayMs]).toEqual([true, 1000]);
        now += 400;
        const retry = await limiter.reserve('k', 1, { maxDelay: '1s', idempotencyKey: 'r' });
        expect([retry.allowed, retry.delayMs, heard.replayed()]).toEqual([true, 600, true]);
        expect((await limiter.reserve('k', 1, { maxDelay: '2s' })).delayMs).toBe(1600);
      },
    );

    gatedIt(
      'a reservation retried tells the slot its first answer told (a delay of whole ms, counted down), whatever the exact slot',
      () => remembers() && suite.store.capabilities.reservations === true && runsAll(suite.store, ['leaky-bucket']),
      async () => {
        // A slot 1428.57 ms away, told as 1429; retried 139.5714285704 ms later: 1289.43 ms left of the
        // slot told (1290), where the exact slot is 1289.000000001 ms away (Redis remembered that one).
        let now = 0;
        const { limiter } = heardLimiter(leakyBucket({ capacity: 1, leakRate: 0.7 }), () => now);
        await limiter.consume('k');
        const first = await limiter.reserve('k', 1, { maxDelay: '3s', idempotencyKey: 'r' });
        expect([first.allowed, first.delayMs]).toEqual([true, 1429]);
        now = 139.57142857042857;
        const retry = await limiter.reserve('k', 1, { maxDelay: '3s', idempotencyKey: 'r' });
        expect([retry.allowed, retry.delayMs]).toEqual([true, 1290]);
      },
    );
  });
}
