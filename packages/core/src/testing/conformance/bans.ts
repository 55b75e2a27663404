import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { createLimiter, type LimiterOptions } from '../../limiter/index.js';
import { HeardIdempotency } from './heard.js';
import {
  freshPrefix,
  gatedIt,
  limiterWith,
  rateSamples,
  resetHeard,
  runsAll,
  sharingLimiters,
  type Suite,
} from './suite.js';

const HOUR = 3_600_000;

/** Bans (`limiter.block`, `unblock`), on a store that declares `capabilities.bans`: checked in the decision's own step, for every rate algorithm. */
export function describeBans(suite: Suite): void {
  const bans = () => suite.store.capabilities.bans === true;
  const limiterOf = (options: Partial<LimiterOptions> & Pick<LimiterOptions, 'algorithm'>, clock: () => number) =>
    limiterWith(suite, 'ban', { clock, bans: true, ...options });

  describe('bans (limiter.block, limiter.unblock)', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a banned key is denied without charging, with the ban's time left; other keys are not; unblock admits it again with its units intact`,
        () => bans() && runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 1_000;
          const limiter = limiterOf({ algorithm: sample.make(10, 60_000), denyCache: false }, () => now);
          const before = await limiter.consume('k');
          expect(before.allowed).toBe(true);
          await limiter.block('k', '1h', { reason: 'abuse' });
          now = 2_000;
          for (let i = 0; i < 3; i++)
            expect(await limiter.consume('k')).toMatchObject({
              allowed: false,
              reason: 'blocked',
              remaining: 0,
              retryAfterMs: HOUR - 1_000,
            });
          expect((await limiter.consume('other')).allowed).toBe(true);
          await limiter.unblock('k');
          const after = await limiter.consume('k');
          expect(after).toMatchObject({ allowed: true });
          expect(after.reason).toBeUndefined();
          // The ban charged nothing: two admitted, as if the three denied requests had not come.
          expect(after.remaining).toBe(before.remaining - 1);
        },
      );
    }

    gatedIt(
      'a ban ends by itself after its duration; a reset lifts it; a later ban replaces an earlier one, and a lockout',
      () => bans() && runsAll(suite.store, ['fixed-window']),
      async () => {
        let now = 10_000;
        const limiter = limiterOf(
          { algorithm: fixedWindow({ limit: 1, window: '1m' }), blockDuration: '1h', denyCache: false },
          () => now,
        );
        await limiter.block('k', '10s');
        now = 19_999;
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'blocked', retryAfterMs: 1 });
        now = 20_000;
        expect((await limiter.consume('k')).allowed).toBe(true);
        // A lockout of an hour, replaced by a ban of a minute.
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: HOUR });
        await limiter.block('k', '1m');
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'blocked', retryAfterMs: 60_000 });
        await limiter.reset('k');
        expect((await limiter.consume('k')).allowed).toBe(true);
      },
    );

    gatedIt(
      'a second limiter on the store sees the ban at once, and the unban too, through its deny cache',
      () => bans() && runsAll(suite.store, ['fixed-window']),
      async () => {
        const [a, b] = sharingLimiters(suite, 'ban-shared', {
          algorithm: fixedWindow({ limit: 5, window: '1h' }),
          clock: () => 5_000,
          bans: true,
        });
        await a.block('k', '1h');
        expect(await b.consume('k')).toMatchObject({ allowed: false, reason: 'blocked' });
        // A store several processes share tells every deny cache of the unban, as of a reset: once the
        // store's own listener has heard it, so has b's.
        const told = resetHeard(suite.store, b.storageKey('k'));
        await a.unblock('k');
        await told;
        expect(await b.consume('k')).toMatchObject({ allowed: true, remaining: 4 });
      },
    );

    gatedIt(
      'a ban reaches the key in every layout: a limiter of per-call algorithms banning before any call, and a per-call algorithm of another kind than its own',
      () => bans() && runsAll(suite.store, ['fixed-window', 'token-bucket', 'sliding-window-log']),
      async () => {
        const prefix = freshPrefix('ban-layouts');
        /** A limiter with bans on the one prefix, at `at`. */
        const banning = (at: number, options: Partial<LimiterOptions> = {}) =>
          createLimiter({
            store: suite.store,
            clock: () => at,
            prefix,
            timeout: false,
            bans: true,
            denyCache: false,
            ...options,
          });
        const admin = banning(1_000);
        await admin.block('k', '1h');
        const plans = banning(2_000);
        expect(await plans.consume('k', 1, tokenBucket({ capacity: 5, refillRate: 1 }))).toMatchObject({
          allowed: false,
          reason: 'blocked',
        });
        const own = banning(2_000, { algorithm: fixedWindow({ limit: 5, window: '1m' }) });
        expect(await own.consume('k')).toMatchObject({ allowed: false, reason: 'blocked' });
        expect(await own.consume('k', 1, slidingWindowLog({ limit: 5, window: '1m' }))).toMatchObject({
          allowed: false,
          reason: 'blocked',
        });
        await own.unblock('k');
        expect((await plans.consume('k', 1, tokenBucket({ capacity: 5, refillRate: 1 }))).allowed).toBe(true);
        expect((await own.consume('k', 1, slidingWindowLog({ limit: 5, window: '1m' }))).allowed).toBe(true);
      },
    );

    gatedIt(
      'a reset from a limiter with an algorithm of its own (another instance, which never met the plan) lifts the ban in every layout: a plan of another kind chosen per call is admitted again',
      () => bans() && runsAll(suite.store, ['fixed-window', 'token-bucket']),
      async () => {
        const prefix = freshPrefix('ban-reset-own');
        const instance = () =>
          createLimiter({
            store: suite.store,
            algorithm: fixedWindow({ limit: 5, window: '10s' }),
            clock: () => 1_000,
            prefix,
            timeout: false,
            bans: true,
            denyCache: false,
          });
        const plan = tokenBucket({ capacity: 10, refillRate: 1 });
        const serving = instance();
        expect((await serving.consume('k', 1, plan)).allowed).toBe(true);
        const operator = instance();
        await operator.block('k', '1h');
        expect(await serving.consume('k', 1, plan)).toMatchObject({ allowed: false, reason: 'blocked' });
        await operator.reset('k');
        expect((await serving.consume('k')).allowed).toBe(true);
        expect((await serving.consume('k', 1, plan)).allowed).toBe(true);
      },
    );

    gatedIt(
      'a reset from a limiter without an algorithm of its own, made afresh (another instance), lifts the ban and forgets the state in every layout another instance charged',
      () => bans() && runsAll(suite.store, ['token-bucket', 'sliding-window-log']),
      async () => {
        const prefix = freshPrefix('ban-reset-layouts');
        const plans = () =>
          createLimiter({
            store: suite.store,
            clock: () => 1_000,
            prefix,
            timeout: false,
            bans: true,
            denyCache: false,
          });
        const bucket = tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' });
        const log = slidingWindowLog({ limit: 2, window: '1h' });
        const charging = plans();
        await charging.consume('k', 2, bucket);
        await charging.consume('k', 2, log);
        await charging.block('k', '1h');
        await plans().reset('k');
        expect(await charging.consume('k', 2, bucket)).toMatchObject({ allowed: true, remaining: 0 });
        expect(await charging.consume('k', 2, log)).toMatchObject({ allowed: true, remaining: 0 });
      },
    );

    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a ban outranks a replay: the retry of a request admitted before the ban is denied ('blocked', nothing charged, no id looked up or written); unblocked, it replays`,
        () => bans() && suite.store.capabilities.idempotency === true && runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 1_000;
          const heard = new HeardIdempotency();
          const limiter = limiterOf(
            { algorithm: sample.make(10, 60_000), denyCache: false, observer: heard.observer },
            () => now,
          );
          const first = await limiter.consume('k', 1, { idempotencyKey: 'order-1' });
          expect(first.allowed).toBe(true);
          await limiter.block('k', '1h');
          now = 2_000;
          // The same request, the same id with another fingerprint (cost 2), a new id: each the ban's denial, unmarked.
          for (const [cost, id] of [
            [1, 'order-1'],
            [1, 'order-1'],
            [2, 'order-1'],
            [1, 'order-2'],
          ] as const) {
            const retry = await limiter.consume('k', cost, { idempotencyKey: id });
            expect(retry).toMatchObject({
              allowed: false,
              reason: 'blocked',
              remaining: 0,
              retryAfterMs: HOUR - 1_000,
            });
            const said = heard.latest();
            expect([said === 'replayed', said === 'conflict']).toEqual([false, false]);
          }
          await limiter.unblock('k');
          // The record was kept (the ban lifted early leaves the client as it was): its retry replays.
          const replay = await limiter.consume('k', 1, { idempotencyKey: 'order-1' });
          expect([replay.allowed, heard.replayed(), replay.at, replay.reason]).toEqual([
            true,
            true,
            first.at,
            undefined,
          ]);
          // The ban charged nothing and remembered nothing: order-2 is charged now, as new.
          const second = await limiter.consume('k', 1, { idempotencyKey: 'order-2' });
          expect([second.allowed, heard.replayed(), second.remaining]).toEqual([true, false, first.remaining - 1]);
        },
      );
    }

    gatedIt(
      'block() on a limiter without bans (or on a concurrency limit) is a typed error; bad input is refused before the store is asked',
      () => bans(),
      async () => {
        const plain = limiterWith(suite, 'ban-off', { algorithm: fixedWindow({ limit: 1, window: '1m' }) });
        await expect(plain.block('k', '1h')).rejects.toMatchObject({
          code: 'RL_UNSUPPORTED',
          message: expect.stringMatching(/bans: true/),
        });
        const limiter = limiterOf({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, () => 0);
        await expect(limiter.block('', '1h')).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
        await expect(limiter.block('k', 0 as never)).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
          field: 'limiter.block.duration',
        });
        await expect(limiter.block('k', '1h', { reason: 'x\n' })).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
          field: 'limiter.block.options.reason',
        });
        await expect(limiter.block('k', '1h', null as never)).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
        expect((await limiter.consume('k')).allowed).toBe(true);
      },
    );
  });
}
