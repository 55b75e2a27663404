import { describe, expect } from 'vitest';
import { withBlock } from '../../algorithms/block.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { slidingWindowCounter } from '../../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { createLimiter } from '../../limiter/index.js';
import type { Scenario } from '../kind-suite.js';
import { expectScenario } from './tables.js';
import { freshPrefix, gatedIt, runsAll, type Suite } from './suite.js';

const HOUR = 3_600_000;
const QUARTER = 900_000;

/**
 * The lockout tables (`blockDuration`, through `withBlock`), at named times: a denial blocks the key
 * for the block from that denial; requests during it are denied with the time to its end, charge
 * nothing and do not extend it; after it the algorithm decides as before.
 */
export const lockoutScenarios: readonly Scenario[] = [
  {
    name: 'lockout: brute force, fixed window 5 per 15 min, then a 1-hour block',
    description: 'The sixth failed login at 1 min blocks the key until 61 min, across the windows in between; attempts during the block count for nothing.',
    algorithms: [withBlock(fixedWindow({ limit: 5, window: '15m' }), HOUR)],
    steps: [
      { at: 0, times: 5, expect: { admitted: 5, last: { remaining: 0 } } },
      { at: 60_000, expect: { admitted: 0, last: { allowed: false, remaining: 0, retryAfterMs: HOUR, resetMs: HOUR } } },
      { at: 120_000, op: 'peek', cost: 1, expect: { last: { allowed: false, retryAfterMs: HOUR - 60_000 } } },
      { at: QUARTER, times: 3, expect: { admitted: 0, last: { remaining: 0, retryAfterMs: HOUR + 60_000 - QUARTER, resetMs: HOUR + 60_000 - QUARTER } } },
      { at: HOUR + 30_000, times: 3, expect: { admitted: 0, last: { retryAfterMs: 30_000 } } },
      { at: HOUR + 59_999, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
      // The window [60 min, 75 min) holds nothing of the blocked attempts.
      { at: HOUR + 60_000, expect: { admitted: 1, last: { remaining: 4, resetMs: QUARTER - 60_000 } } },
      { at: HOUR + 60_000, times: 4, expect: { admitted: 4, last: { remaining: 0 } } },
      { at: HOUR + 70_000, expect: { admitted: 0, last: { retryAfterMs: HOUR } } },
      { at: HOUR + 80_000, op: 'reset' },
      { at: HOUR + 80_000, expect: { admitted: 1, last: { remaining: 4 } } },
    ],
  },
  {
    name: 'lockout: sliding window log, 2 per 1s, a 5 s block',
    description: 'The block outlasts the records: at 1.5 s the window is empty and the key still blocked; at 5.1 s it is free.',
    algorithms: [withBlock(slidingWindowLog({ limit: 2, window: '1s' }), 5_000)],
    steps: [
      { at: 0, times: 2, expect: { admitted: 2 } },
      { at: 100, expect: { admitted: 0, last: { retryAfterMs: 5_000, resetMs: 5_000 } } },
      { at: 1_500, expect: { admitted: 0, last: { retryAfterMs: 3_600, resetMs: 3_600, remaining: 0 } } },
      { at: 5_100, times: 3, expect: { admitted: 2, last: { retryAfterMs: 5_000 } } },
    ],
  },
  {
    name: 'lockout: sliding window counter, 2 per 1s, a 2 s block',
    description: 'A denial blocks the key; the block ends 2 s later whatever the estimate says.',
    algorithms: [withBlock(slidingWindowCounter({ limit: 2, window: '1s' }), 2_000)],
    steps: [
      { at: 500, times: 3, expect: { admitted: 2, last: { allowed: false, retryAfterMs: 2_000, resetMs: 2_000 } } },
      { at: 2_499, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
      { at: 2_500, expect: { admitted: 1, last: { remaining: 1 } } },
    ],
  },
  {
    name: 'lockout: token bucket, capacity 2, 1 per second, a 10 s block',
    description: 'The bucket is full again long before the block ends; the block decides until then, and then the full bucket.',
    algorithms: [withBlock(tokenBucket({ capacity: 2, refillRate: 1 }), 10_000)],
    steps: [
      { at: 0, times: 3, expect: { admitted: 2, last: { allowed: false, retryAfterMs: 10_000, resetMs: 10_000 } } },
      { at: 5_000, expect: { admitted: 0, last: { retryAfterMs: 5_000, resetMs: 5_000 } } },
      { at: 10_000, times: 3, expect: { admitted: 2, last: { allowed: false, retryAfterMs: 10_000 } } },
    ],
  },
  {
    name: 'lockout: shaping leaky bucket, queue 2, 1 per second, a 3 s block',
    description: 'A full queue blocks the key; requests during the block are neither queued nor delayed.',
    algorithms: [withBlock(leakyBucket({ capacity: 2, leakRate: 1, mode: 'shape' }), 3_000)],
    steps: [
      { at: 0, times: 3, expect: { admitted: 2, delays: [0, 1_000], last: { retryAfterMs: 3_000 } } },
      { at: 2_500, expect: { admitted: 0, last: { retryAfterMs: 500, delayMs: 0 } } },
      { at: 3_000, expect: { admitted: 1, delays: [0] } },
    ],
  },
];

/** Lockouts, on a store that declares `capabilities.blocks`. */
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
