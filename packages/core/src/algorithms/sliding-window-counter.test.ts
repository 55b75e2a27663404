import { describe, it } from 'vitest';
import { expectExpiry, runSteps } from '../testing/step-table.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';

describe('slidingWindowCounter: admits while previous × (window − elapsed) / window + current + cost ≤ limit', () => {
  it("the seed's first batch weighs 100 × 0.8 = 80 at 1.200 s, so exactly 20 more are admitted", () => {
    const [t0, t1] = [990, 1200];
    runSteps(slidingWindowCounter({ limit: 100, window: '1s' }), [
      { at: t0, times: 100, admitted: 100, last: { remaining: 0, resetMs: 1010 }, expiresAt: 2000 },
      {
        at: t1,
        times: 100,
        admitted: 20,
        last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 1800 },
        expiresAt: 3000,
      },
    ]);
  });

  it('at the first instant of a window the previous count weighs fully, then fades linearly', () => {
    const [t0, t1, t2, t3, t4] = [0, 1000, 1100, 2999, 3000];
    runSteps(slidingWindowCounter({ limit: 10, window: '1s' }), [
      { at: t0, times: 10, admitted: 10 },
      { at: t1, last: { allowed: false, retryAfterMs: 100 } },
      { at: t2, last: { allowed: true, remaining: 0 } },
      { at: t3, op: 'peek', last: { remaining: 9 } },
      { at: t4, op: 'peek', last: { remaining: 10, resetMs: 0 } },
    ]);
  });

  it('counts costs above 1 and fractional costs in the current window, and weighs them on the next', () => {
    const [t0, t1] = [500, 1500];
    runSteps(slidingWindowCounter({ limit: 10, window: '1s' }), [
      { at: t0, cost: 4, times: 3, admitted: 2, last: { allowed: false, remaining: 2 } },
      { at: t0, cost: 1.5, last: { allowed: true, remaining: 0 } },
      // Half of the previous 9.5 still weighs: 4.75 + 4 = 8.75, so a cost of 1.25 fits and 1.5 does not.
      { at: t1, cost: 4, last: { allowed: true, remaining: 1 } },
      { at: t1, op: 'peek', cost: 1.5, last: { allowed: false } },
      { at: t1, cost: 1.25, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a peek (commit false) decides without writing', () => {
    const t0 = 100;
    runSteps(slidingWindowCounter({ limit: 3, window: '1s' }), [
      { at: t0, cost: 2 },
      { at: t0, op: 'peek', cost: 1, times: 3, last: { allowed: true, remaining: 0 } },
      { at: t0, cost: 1, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a clock that goes back keeps the stored windows (elapsed clamps to 0)', () => {
    const [t0, t1, t2] = [1500, 200, 2500];
    runSteps(slidingWindowCounter({ limit: 2, window: '1s' }), [
      { at: t0, times: 2, admitted: 2, expiresAt: 3000 },
      { at: t1, last: { allowed: false }, expiresAt: 3000 },
      // In the next window half of the 2 still weighs: 1 + 1 fits.
      { at: t2, times: 2, admitted: 1 },
    ]);
  });

  it('a smaller limit counts the usage already in both windows', () => {
    const [t0, t1] = [0, 1500];
    runSteps(
      [slidingWindowCounter({ limit: 10, window: '1s' }), slidingWindowCounter({ limit: 4, window: '1s' })],
      [
        { at: t0, times: 10, admitted: 10 },
        { at: t1, config: 1, last: { allowed: false, remaining: 0 } },
      ],
    );
  });

  it('undo gives back units in the current window only', () => {
    const [t0, t1] = [0, 1000];
    runSteps(slidingWindowCounter({ limit: 2, window: '1s' }), [
      { at: t0, times: 2, admitted: 2 },
      { at: t0, op: 'undo' },
      { at: t0, op: 'peek', last: { remaining: 1 } },
      { at: t1, op: 'undo' },
      { at: t1, op: 'peek', last: { remaining: 1 } },
    ]);
  });

  it('expires two windows after its start, when neither window weighs any more', () => {
    expectExpiry(slidingWindowCounter({ limit: 4, window: '1s' }), { at: 500, cost: 4, expiresAt: 2000 });
  });
});

describeKindScenarios('sliding-window-counter');
