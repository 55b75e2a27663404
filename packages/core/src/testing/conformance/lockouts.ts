import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { createLimiter } from '../../limiter/index.js';
import { lockoutScenarios } from '../scenarios.js';
import { expectScenario } from './tables.js';
import { freshPrefix, gatedIt, runsAll, type Suite } from './suite.js';

const HOUR = 3_600_000;

/** Lockouts, on a store that declares `capabilities.blocks`: each kind's lockout tables (`lockoutScenarios`), then the shared block. */
export function describeLockouts(suite: Suite): void {
  const blocks = () => suite.store.capabilities.blocks === true;
  describe('lockouts (blockDuration)', () => {
    for (const scenario of lockoutScenarios) {
      gatedIt(`${scenario.name}: ${scenario.description}`, () => blocks() && runsAll(suite.store, scenario.algorithms), () => expectScenario(suite.store, scenario));
    }

    gatedIt(
      'two limiters on one store share the block; a give-back does not lift it, a reset does',
      () => blocks() && runsAll(suite.store, ['fixed-window']),
      async () => {
        let now = 1_000;
        const prefix = freshPrefix('lockout');
        const options = { algorithm: fixedWindow({ limit: 2, window: '1m' }), store: suite.store, clock: () => now, prefix, timeout: false as const, blockDuration: '1h' as const };
        const first = createLimiter({ ...options, denyCache: false });
        const second = createLimiter({ ...options, denyCache: false });
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
  });
}
