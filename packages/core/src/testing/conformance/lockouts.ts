import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { lockoutScenarios } from '../scenarios.js';
import { expectScenario } from './tables.js';
import { HeardIdempotency } from './heard.js';
import { gatedIt, limiterWith, rateSamples, runsAll, sharingLimiters, type Suite } from './suite.js';

const HOUR = 3_600_000;

/** Lockouts, on a store that declares `capabilities.blocks`: each kind's lockout tables (`lockoutScenarios`), then the shared block. */
export function describeLockouts(suite: Suite): void {
  const blocks = () => suite.store.capabilities.blocks === true;
  describe('lockouts (blockDuration)', () => {
    for (const scenario of lockoutScenarios) {
      gatedIt(
        `${scenario.name}: ${scenario.description}`,
        () => blocks() && runsAll(suite.store, scenario.algorithms),
        () => expectScenario(suite.store, scenario),
      );
    }

    gatedIt(
      'two limiters on one store share the block; a give-back does not lift it, a reset does',
      () => blocks() && runsAll(suite.store, ['fixed-window']),
      async () => {
        let now = 1_000;
        const [first, second] = sharingLimiters(suite, 'lockout', {
          algorithm: fixedWindow({ limit: 2, window: '1m' }),
          clock: () => now,
          blockDuration: '1h',
          denyCache: false,
        });
        const admitted = await first.consume('login');
        await first.consume('login');
        expect(await first.consume('login')).toMatchObject({ allowed: false, retryAfterMs: HOUR });
        now = 2_000;
        expect(await second.consume('login')).toMatchObject({ allowed: false, retryAfterMs: HOUR - 1_000 });
        await second.undo('login', 1, admitted);
        expect(await second.consume('login')).toMatchObject({ allowed: false, retryAfterMs: HOUR - 1_000 });
        await second.reset('login');
        expect(await first.consume('login')).toMatchObject({ allowed: true, remaining: 1 });
      },
    );

    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a lockout outranks a replay: the retry of a request admitted before it is denied (the lockout's denial, unmarked, nothing written); once it ends, the retry replays`,
        () => blocks() && suite.store.capabilities.idempotency === true && runsAll(suite.store, [sample.kind]),
        async () => {
          let now = 1_000;
          const heard = new HeardIdempotency();
          const limiter = limiterWith(suite, 'lockout-replay', {
            algorithm: sample.make(2, 60_000),
            clock: () => now,
            denyCache: false,
            blockDuration: '1h',
            idempotencyTtl: '2h',
            observer: heard.observer,
          });
          const first = await limiter.consume('k', 1, { idempotencyKey: 'order-1' });
          expect(first.allowed).toBe(true);
          let denials = 0;
          for (let i = 0; i < 10 && denials === 0; i++) if (!(await limiter.consume('k')).allowed) denials++;
          expect(denials).toBe(1);
          now = 2_000;
          for (const cost of [1, 1, 2]) {
            const retry = await limiter.consume('k', cost, { idempotencyKey: 'order-1' });
            expect(retry).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: HOUR - 1_000 });
            const said = heard.latest();
            expect([retry.reason, said === 'replayed', said === 'conflict']).toEqual([undefined, false, false]);
          }
          now = 1_000 + HOUR;
          const replay = await limiter.consume('k', 1, { idempotencyKey: 'order-1' });
          expect([replay.allowed, heard.replayed(), replay.at]).toEqual([true, true, first.at]);
        },
      );
    }
  });
}
