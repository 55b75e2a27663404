// RL_SHORT_WINDOW beyond the windows and intervals (short-span.test.ts): the limiter's spans, a
// permit's lease and deny(req)'s ban.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Run } from './compose/run.js';
import { refusal } from './http/refusal.js';
import { concurrency, createLimiter, fixedWindow } from './index.js';
import type { LimiterCore } from './limiter/core.js';
import { parseLimiterOptions } from './limiter/options.js';
import { SHORT_WINDOW_CODE } from './short-span.js';
import { StepStore } from './testing/step-store.js';
import { warningsOf } from './testing/capture.js';

afterEach(() => {
  vi.restoreAllMocks();
});

// The other spans a bare number under a second almost surely gets wrong (rate-limiter-flexible's
// blockDuration: 60 is a minute there), each under its own field; a limiter's block and override
// ttl, which need a store with bans and overrides, are in @rl/store-memory's short-span.test.ts.
describe('RL_SHORT_WINDOW: the other spans a bare number under one second gets wrong', () => {
  const store = new StepStore();

  it.each([
    [
      'createLimiter.blockDuration',
      () => createLimiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }), store, blockDuration: 70 }),
    ],
    [
      'createLimiter.idempotencyTtl',
      () => createLimiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }), store, idempotencyTtl: 71 }),
    ],
    ['concurrency.lease', () => concurrency({ limit: 5, lease: 72 })],
    [
      'rateLimit.blockDuration',
      () =>
        parseLimiterOptions(
          { algorithm: fixedWindow({ limit: 5, window: '1m' }), store, blockDuration: 73 },
          'rateLimit',
        ),
    ],
  ])('%s', (field, build) => {
    const messages = warningsOf(SHORT_WINDOW_CODE, () => {
      build();
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(
      new RegExp(`^${field.replace(/[.[\]]/g, '\\$&')}: 7\\d is 7\\d ms: did you mean '7\\ds'\\?`),
    );
  });

  it("deny(req)'s answer of 74 (a ban's length)", () => {
    const algorithm = fixedWindow({ limit: 5, window: '1m' });
    const run = new Run(1);
    const messages = warningsOf(SHORT_WINDOW_CODE, () => {
      expect(refusal(74, run, [{ core: { algorithm } as LimiterCore }])).toBe(74); // still 74 ms, as written
    });
    expect(messages).toEqual([
      "deny(req): 74 is 74 ms: did you mean '74s'? A bare number is milliseconds; write '74ms' to keep 74 ms without this warning.",
    ]);
  });

  it('no warning for the spans where a few hundred ms is normal: timeout, maxDelay, a quota lease ttl, storeRetryInterval', async () => {
    let reserved: Promise<unknown> | undefined;
    const messages = warningsOf(SHORT_WINDOW_CODE, () => {
      const limiter = createLimiter({
        algorithm: fixedWindow({ limit: 50, window: '1m' }),
        store,
        timeout: 75,
        storeRetryInterval: 76,
        lease: { units: 5, ttl: 77 },
      });
      reserved = limiter.reserve('k', 1, { maxDelay: 78 });
      createLimiter({
        algorithm: fixedWindow({ limit: 5, window: '1m' }),
        store,
        blockDuration: '79ms',
        idempotencyTtl: 5000,
      });
      concurrency({ limit: 5, lease: '80ms' });
    });
    await reserved;
    expect(messages).toEqual([]);
  });
});
