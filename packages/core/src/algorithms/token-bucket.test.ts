import { describe, it } from 'vitest';
import { expectExpiry, runSteps } from '../testing/step-table.js';
import { tokenBucket } from './token-bucket.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';

describe('tokenBucket: starts full, refills continuously at refillRate / interval, a denial takes nothing', () => {
  it("the seed's two batches: a full bucket of 20 admits 20, and 20 ms later the 2 tokens that came back", () => {
    const [t0, t1] = [990, 1010];
    // After each batch: empty, a token back in 10 ms, full again in 200 ms.
    const emptied = { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 200 };
    runSteps(tokenBucket({ capacity: 20, refillRate: 100, interval: '1s' }), [
      { at: t0, times: 100, admitted: 20, last: emptied, expiresAt: 1190 },
      { at: t1, times: 100, admitted: 2, last: emptied, expiresAt: 1210 },
    ]);
  });

  it('takes costs above 1 and fractional costs; partial tokens never admit a request early', () => {
    const [t0, t1, t2, t3] = [0, 499, 500, 550];
    runSteps(tokenBucket({ capacity: 20, refillRate: 10 }), [
      { at: t0, cost: 5, times: 4, admitted: 4, last: { remaining: 0, resetMs: 2000 } },
      { at: t0, cost: 5, last: { allowed: false, retryAfterMs: 500 } },
      { at: t1, cost: 5, last: { allowed: false, retryAfterMs: 1, remaining: 4 } },
      { at: t2, cost: 5, last: { allowed: true, remaining: 0 } },
      { at: t3, cost: 0.5, last: { allowed: true, remaining: 0, resetMs: 2000 } },
      { at: t3, cost: 0.25, last: { allowed: false, retryAfterMs: 25 } },
    ]);
  });

  it('keeps fractional tokens across calls: a third of a token per 333.3 ms at 3 per second', () => {
    const [t0, t1, t2, t3] = [0, 200, 334, 667];
    runSteps(tokenBucket({ capacity: 3, refillRate: 3 }), [
      { at: t0, times: 3, admitted: 3 },
      { at: t1, last: { allowed: false, retryAfterMs: 134 } },
      { at: t2, last: { allowed: true, remaining: 0 } },
      { at: t3, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a peek (commit false) decides without writing', () => {
    const t0 = 0;
    runSteps(tokenBucket({ capacity: 5, refillRate: 1 }), [
      { at: t0, times: 2, admitted: 2 },
      { at: t0, op: 'peek', times: 3, last: { allowed: true, remaining: 3, resetMs: 2000 } },
      { at: t0, op: 'peek', cost: 4, last: { allowed: false, retryAfterMs: 1000 } },
      { at: t0, times: 4, admitted: 3 },
    ]);
  });

  it('a clock that goes back adds no tokens, and the refill time never moves back', () => {
    const [t0, t1, t2, t3] = [1000, 0, 1500, 2000];
    runSteps(tokenBucket({ capacity: 2, refillRate: 1 }), [
      { at: t0, times: 2, admitted: 2, expiresAt: 3000 },
      // Waits are counted from the stored time, 1000 ms ahead of this call.
      { at: t1, last: { allowed: false, remaining: 0, retryAfterMs: 2000, resetMs: 3000 }, expiresAt: 3000 },
      { at: t2, last: { allowed: false, retryAfterMs: 500 } },
      { at: t3, times: 2, admitted: 1, expiresAt: 4000 },
    ]);
  });

  it('a smaller capacity clamps the balance: 5 left stay 5, a full bucket becomes 20, not 100', () => {
    const small = [tokenBucket({ capacity: 100, refillRate: 1 }), tokenBucket({ capacity: 20, refillRate: 1 })];
    const t0 = 0;
    runSteps(small, [
      { at: t0, times: 95, admitted: 95 },
      { at: t0, config: 1, times: 6, admitted: 5, expiresAt: 20_000 },
    ]);
    runSteps(small, [
      { at: t0, last: { remaining: 99 } },
      { at: t0, config: 1, last: { allowed: true, remaining: 19, resetMs: 1000 } },
    ]);
  });

  it('undo gives tokens back, never above the capacity', () => {
    const t0 = 0;
    runSteps(tokenBucket({ capacity: 20, refillRate: 100 }), [
      { at: t0, cost: 3, last: { remaining: 17 } },
      { at: t0, op: 'undo', cost: 2 },
      { at: t0, op: 'peek', last: { remaining: 19 } },
      { at: t0, op: 'undo', cost: 5, expiresAt: 0 },
      { at: t0, op: 'peek', last: { remaining: 20, resetMs: 0 } },
    ]);
  });

  it('expires only once it would be full again (capacity / rate after it emptied)', () => {
    expectExpiry(tokenBucket({ capacity: 20, refillRate: 100 }), { at: 0, cost: 20, expiresAt: 200 });
  });
});

describeKindScenarios('token-bucket');
