import { describe, expect } from 'vitest';
import type { Algorithm, AlgorithmKind } from '../../algorithm.js';
import { calendarWindow } from '../../algorithms/calendar-window.js';
import { concurrency } from '../../algorithms/concurrency.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { withBlock } from '../../algorithms/block.js';
import type { Decision } from '../../decision.js';
import type { Duration } from '../../duration.js';
import type { LimiterOptions } from '../../limiter/index.js';
import { describeCountedReservations } from './override-counted.js';
import { gatedIt, limiterWith, rateSamples, resetHeard, runsAll, sharingLimiters, type Suite } from './suite.js';

const MINUTE = 60_000;

/** What two decisions must agree on: all but `at` (the same instant here). */
const fields = (d: Decision) => ({
  allowed: d.allowed,
  limit: d.limit,
  remaining: d.remaining,
  resetMs: d.resetMs,
  retryAfterMs: d.retryAfterMs,
  delayMs: d.delayMs,
  policy: { ...d.policy },
});

/**
 * Overrides (`limiter.setOverride`, `getOverride`, `clearOverride`), on a store whose
 * `capabilities.overrides` lists the kind: read in the decision's own step, for every rate algorithm
 * the store overrides.
 */
export function describeOverrides(suite: Suite): void {
  const overrides = (kinds: readonly AlgorithmKind[]) =>
    kinds.every((kind) => (suite.store.capabilities.overrides ?? []).includes(kind)) && runsAll(suite.store, kinds);
  const limiterOf = (options: Partial<LimiterOptions>, clock: () => number) =>
    limiterWith(suite, 'override', { clock, overrides: true, denyCache: false, ...options });

  describe('overrides (limiter.setOverride, getOverride, clearOverride)', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a key under an override decides as the override's own algorithm would, with its policy; other keys keep the limit's; cleared, the limit's own again`,
        () => overrides([sample.kind]),
        async () => {
          let now = 1_000;
          const own = sample.make(10, MINUTE);
          const override = sample.make(3, MINUTE);
          const limiter = limiterOf({ algorithm: own }, () => now);
          const alone = limiterWith(suite, 'override-alone', { algorithm: override, clock: () => now });
          await limiter.setOverride('k', override, { ttl: '1h' });
          for (const [at, cost] of [
            [1_000, 1],
            [1_000, 1],
            [1_500, 1],
            [1_500, 2],
            [30_000, 1],
            [61_000, 1],
          ] as const) {
            now = at;
            expect(fields(await limiter.consume('k', cost))).toEqual(fields(await alone.consume('k', cost)));
          }
          const other = await limiter.consume('other');
          expect(other.policy).toEqual(own.policy);
          expect(other.limit).toBe(own.limit);
          await limiter.clearOverride('k');
          expect(await limiter.getOverride('k')).toBeUndefined();
          const after = await limiter.consume('k');
          expect(after.policy).toEqual(own.policy);
          expect(after.limit).toBe(own.limit);
        },
      );
    }

    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a cost above the override's limit is denied until the override ends (no earlier retry could admit it); a cost within it waits as the override's algorithm says`,
        () => overrides([sample.kind]),
        async () => {
          let now = 1_000;
          const override = sample.make(3, MINUTE);
          const limiter = limiterOf({ algorithm: sample.make(10, MINUTE) }, () => now);
          const alone = limiterWith(suite, 'override-alone-cost', { algorithm: override, clock: () => now });
          await limiter.setOverride('k', override, { ttl: '1h' });
          expect(await limiter.consume('k', 5)).toMatchObject({ allowed: false, limit: 3, retryAfterMs: 3_600_000 });
          now = 1_801_000;
          expect(await limiter.consume('k', 5)).toMatchObject({ allowed: false, retryAfterMs: 1_800_000 });
          // Within the override's limit: as the override's algorithm alone decides, its retries its own.
          for (let i = 0; i < 3; i++)
            expect(fields(await limiter.consume('k', 3))).toEqual(fields(await alone.consume('k', 3)));
          // The override ended: the limit's own configuration admits the cost.
          now = 3_601_000;
          expect(await limiter.consume('k', 5)).toMatchObject({ allowed: true, limit: 10 });
        },
      );
    }

    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a reservation of a cost above the override's limit is denied until the override ends, nothing taken (no slot could fit it); one within it reserves as the override's algorithm says`,
        () => overrides([sample.kind]) && suite.store.capabilities.reservations === true,
        async () => {
          const now = 1_000;
          const override = sample.make(3, MINUTE);
          const limiter = limiterOf({ algorithm: sample.make(10, MINUTE) }, () => now);
          const alone = limiterWith(suite, 'override-alone-reserve', { algorithm: override, clock: () => now });
          await limiter.setOverride('k', override, { ttl: '1h' });
          const maxDelay = MINUTE;
          expect(await limiter.reserve('k', 5, { maxDelay })).toMatchObject({
            allowed: false,
            limit: 3,
            delayMs: 0,
            retryAfterMs: 3_600_000,
          });
          for (let i = 0; i < 3; i++)
            expect(fields(await limiter.reserve('k', 3, { maxDelay }))).toEqual(
              fields(await alone.reserve('k', 3, { maxDelay })),
            );
        },
      );
    }

    describeCountedReservations(suite, overrides, limiterOf);

    /** A scenario of a cost above an override's limit: the limit's options, the override and its ttl, then [time, cost, what the consume answers]. */
    type Retries = [
      what: string,
      options: Partial<LimiterOptions>,
      override: [Algorithm, Duration],
      steps: [at: number, cost: number, answer: Partial<Decision>][],
    ];
    const retries: Retries[] = [
      [
        "the limit's window ends after the override: the override's end; a deny cache counts it down",
        { algorithm: fixedWindow({ limit: 10, window: '1d' }), denyCache: true },
        [fixedWindow({ limit: 3, window: '1d' }), '1h'],
        [
          [1_000, 5, { allowed: false, retryAfterMs: 3_600_000 }],
          [1_200, 5, { allowed: false, retryAfterMs: 3_599_800 }],
          [3_601_000, 5, { allowed: true, limit: 10 }],
        ],
      ],
      [
        "a smaller cost's cached denial (its retry the window's end) answers no larger cost: the override's end",
        { algorithm: fixedWindow({ limit: 100, window: '1h' }), denyCache: true },
        [fixedWindow({ limit: 1, window: '1h' }), '5s'],
        [
          [1_000, 1, { allowed: true }],
          [1_000, 1, { allowed: false, retryAfterMs: 3_599_000 }],
          [1_000, 5, { allowed: false, retryAfterMs: 5_000 }],
        ],
      ],
      [
        "a lockout shorter than the override: the override's end, also while blocked (a cost within it: the lockout's)",
        { algorithm: fixedWindow({ limit: 10, window: '1m' }), blockDuration: '10m' },
        [fixedWindow({ limit: 2, window: '1m' }), '1h'],
        [
          [1_000, 3, { allowed: false, retryAfterMs: 3_600_000 }],
          [2_000, 1, { allowed: false, retryAfterMs: 599_000 }],
          [2_000, 3, { allowed: false, retryAfterMs: 3_599_000 }],
        ],
      ],
      [
        "a lockout longer than the override: the lockout's end",
        { algorithm: fixedWindow({ limit: 10, window: '1m' }), blockDuration: '10m' },
        [fixedWindow({ limit: 2, window: '1m' }), '5m'],
        [[1_000, 3, { allowed: false, retryAfterMs: 600_000 }]],
      ],
    ];
    for (const [what, options, [override, ttl], steps] of retries) {
      gatedIt(
        `a cost above the override's limit: ${what}`,
        () => overrides(['fixed-window']),
        async () => {
          let now = 1_000;
          const limiter = limiterOf(options, () => now);
          await limiter.setOverride('k', override, { ttl });
          for (const [at, cost, answer] of steps) {
            now = at;
            expect(await limiter.consume('k', cost), `at ${at} ms, cost ${cost}`).toMatchObject(answer);
          }
        },
      );
    }

    gatedIt(
      'an override is read back with its end; it ends by itself after its ttl; a reset keeps it; a new one replaces it',
      () => overrides(['fixed-window']),
      async () => {
        let now = 10_000;
        const limiter = limiterOf({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, () => now);
        const ten = fixedWindow({ limit: 10, window: '1m' });
        await limiter.setOverride('k', ten, { ttl: '30s' });
        const read = await limiter.getOverride('k');
        expect(read?.expiresAt).toBe(40_000);
        expect(read?.algorithm).toMatchObject({ kind: 'fixed-window', limit: 10, policy: ten.policy });
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 9, policy: { quota: 10 } });
        await limiter.reset('k');
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 9, policy: { quota: 10 } });
        await limiter.setOverride('k', fixedWindow({ limit: 5, window: '1m' }), { ttl: '1h' });
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 3, policy: { quota: 5 } });
        now = 40_000;
        expect(await limiter.getOverride('k')).toMatchObject({
          algorithm: { limit: 5 },
          expiresAt: 10_000 + 3_600_000,
        });
        await limiter.setOverride('k', ten, { ttl: '30s' });
        now = 70_000;
        expect(await limiter.getOverride('k')).toBeUndefined();
        // The override has ended: the limit's own, over the state the override left (clamped: none left).
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0, policy: { quota: 1 } });
        expect((await limiter.consume('k')).allowed).toBe(false);
      },
    );

    gatedIt(
      'the state carries over, clamped as after a change of configuration: a bucket of 10 spent to 5 under an override of 3 keeps 3',
      () => overrides(['token-bucket']),
      async () => {
        const now = 1_000;
        const limiter = limiterOf(
          { algorithm: tokenBucket({ capacity: 10, refillRate: 1, interval: '1h' }) },
          () => now,
        );
        for (let i = 0; i < 5; i++) await limiter.consume('k');
        await limiter.setOverride('k', tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' }), { ttl: '1h' });
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 2, limit: 3 });
        await limiter.clearOverride('k');
        // Back to a capacity of 10 with the 2 tokens left: nothing refilled by the change.
        expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1, limit: 10 });
      },
    );

    gatedIt(
      'with a lockout and bans beside it: the override decides, the lockout follows its denial, a ban still denies',
      () => overrides(['fixed-window']) && suite.store.capabilities.bans === true,
      async () => {
        const now = 1_000;
        const limiter = limiterOf(
          { algorithm: fixedWindow({ limit: 1, window: '1m' }), blockDuration: '10m', bans: true },
          () => now,
        );
        await limiter.setOverride('k', fixedWindow({ limit: 2, window: '1m' }), { ttl: '1h' });
        expect((await limiter.consume('k')).allowed).toBe(true);
        expect((await limiter.consume('k')).allowed).toBe(true);
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 600_000 });
        await limiter.setOverride('j', fixedWindow({ limit: 5, window: '1m' }), { ttl: '1h' });
        await limiter.block('j', '1h');
        expect(await limiter.consume('j')).toMatchObject({ allowed: false, reason: 'blocked' });
      },
    );

    gatedIt(
      'a second limiter on the store decides with the override at once, its cached denial forgotten (the store tells every deny cache)',
      () => overrides(['fixed-window']),
      async () => {
        const [a, b] = sharingLimiters(suite, 'override-shared', {
          algorithm: fixedWindow({ limit: 1, window: '1h' }),
          clock: () => 5_000,
          overrides: true,
        });
        expect((await b.consume('k')).allowed).toBe(true);
        expect((await b.consume('k')).allowed).toBe(false);
        const told = resetHeard(suite.store, b.storageKey('k'));
        await a.setOverride('k', fixedWindow({ limit: 10, window: '1h' }), { ttl: '1d' });
        await told;
        expect(await b.consume('k')).toMatchObject({ allowed: true, remaining: 8, policy: { quota: 10 } });
        expect(await b.getOverride('k')).toMatchObject({ algorithm: { limit: 10 } });
      },
    );

    gatedIt(
      'a limiter of per-call algorithms overrides the kind of the algorithm given',
      () => overrides(['fixed-window', 'token-bucket']),
      async () => {
        const limiter = limiterOf({}, () => 1_000);
        await limiter.setOverride('k', tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' }), { ttl: '1h' });
        expect(await limiter.consume('k', 1, tokenBucket({ capacity: 50, refillRate: 1 }))).toMatchObject({
          limit: 2,
          remaining: 1,
        });
        expect(await limiter.consume('k', 1, fixedWindow({ limit: 50, window: '1m' }))).toMatchObject({
          limit: 50,
          remaining: 49,
        });
        expect(await limiter.getOverride('k')).toMatchObject({ algorithm: { kind: 'token-bucket', limit: 2 } });
        await limiter.clearOverride('k');
        expect(await limiter.consume('k', 1, tokenBucket({ capacity: 50, refillRate: 1 }))).toMatchObject({
          limit: 50,
        });
      },
    );

    gatedIt(
      'bad overrides are typed errors, before the store is asked',
      () => overrides(['fixed-window', 'calendar-window']),
      async () => {
        const limiter = limiterOf({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, () => 0);
        const ten = fixedWindow({ limit: 10, window: '1m' });
        const plain = limiterWith(suite, 'override-off', { algorithm: fixedWindow({ limit: 1, window: '1m' }) });
        await expect(plain.setOverride('k', ten, { ttl: '1h' })).rejects.toMatchObject({
          code: 'RL_UNSUPPORTED',
          message: expect.stringMatching(/overrides: true/),
        });
        await expect(plain.getOverride('k')).rejects.toMatchObject({ code: 'RL_UNSUPPORTED' });
        await expect(limiter.setOverride('', ten, { ttl: '1h' })).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
        await expect(
          limiter.setOverride('k', tokenBucket({ capacity: 5, refillRate: 1 }), { ttl: '1h' }),
        ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION', field: 'limiter.setOverride.algorithm' });
        await expect(limiter.setOverride('k', concurrency({ limit: 2 }), { ttl: '1h' })).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
        });
        await expect(limiter.setOverride('k', withBlock(ten, 1000), { ttl: '1h' })).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
          message: expect.stringMatching(/lockout/),
        });
        await expect(limiter.setOverride('k', { limit: 10 } as never, { ttl: '1h' })).rejects.toMatchObject({
          code: 'RL_INVALID_ALGORITHM',
        });
        await expect(limiter.setOverride('k', ten, {} as never)).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
          field: 'limiter.setOverride.options.ttl',
        });
        await expect(limiter.setOverride('k', ten, { ttl: 0 })).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
          field: 'limiter.setOverride.options.ttl',
        });
        await expect(limiter.setOverride('k', ten, null as never)).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
        const monthly = limiterOf({ algorithm: calendarWindow({ limit: 100, period: 'month' }) }, () => 0);
        await expect(
          monthly.setOverride('k', calendarWindow({ limit: 500, period: 'month', timeZone: 'Europe/Paris' }), {
            ttl: '1h',
          }),
        ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION', message: expect.stringMatching(/period/) });
        await monthly.setOverride('k', calendarWindow({ limit: 500, period: 'month' }), { ttl: '1h' });
        expect(await monthly.consume('k')).toMatchObject({
          limit: 500,
          remaining: 499,
          policy: { name: '500-per-month' },
        });
        expect((await limiter.consume('k')).allowed).toBe(true);
      },
    );
  });
}
