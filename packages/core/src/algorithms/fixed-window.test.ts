import { describe, it } from 'vitest';
import { expectExpiry, runSteps } from '../testing/step-table.js';
import { fixedWindow } from './fixed-window.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';

describe('fixedWindow: at most `limit` units in each window [k·window, (k+1)·window)', () => {
  it("the seed's two batches (100 at 0.990 s, 100 at 1.010 s) both pass: they are in different windows", () => {
    const t0 = 990;
    const t1 = 1010;
    runSteps(fixedWindow({ limit: 100, window: '1s' }), [
      { at: t0, times: 100, admitted: 100, last: { remaining: 0, resetMs: 10 }, expiresAt: 1000 },
      { at: t0, last: { allowed: false, retryAfterMs: 10 } },
      { at: t1, times: 100, admitted: 100, last: { remaining: 0, resetMs: 990 }, expiresAt: 2000 },
    ]);
  });

  it('a request at exactly the end of a window belongs to the next one', () => {
    const [t0, t1, t2] = [0, 999, 1000];
    runSteps(fixedWindow({ limit: 1, window: '1s' }), [
      { at: t0, last: { allowed: true, remaining: 0, resetMs: 1000 } },
      { at: t1, last: { allowed: false, retryAfterMs: 1, resetMs: 1 } },
      { at: t2, last: { allowed: true, remaining: 0, resetMs: 1000 }, expiresAt: 2000 },
    ]);
  });

  it('counts costs above 1 and fractional costs; a cost that does not fit waits for the next window', () => {
    const [t0, t1, t2] = [0, 600, 1000];
    runSteps(fixedWindow({ limit: 10, window: '1s' }), [
      { at: t0, cost: 2.5, times: 3, admitted: 3, last: { remaining: 2 } },
      { at: t0, cost: 2.5, last: { allowed: true, remaining: 0 } },
      { at: t1, cost: 0.5, last: { allowed: false, retryAfterMs: 400 } },
      { at: t2, cost: 10, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a peek (commit false) decides without writing, and reports what a take would leave', () => {
    const t0 = 0;
    runSteps(fixedWindow({ limit: 10, window: '1s' }), [
      { at: t0, cost: 3 },
      { at: t0, op: 'peek', last: { allowed: true, remaining: 7 } },
      { at: t0, op: 'peek', cost: 5, times: 3, last: { allowed: true, remaining: 2 } },
      { at: t0, op: 'peek', cost: 8, last: { allowed: false, remaining: 7 } },
      { at: t0, cost: 7, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a clock that goes back into an earlier window keeps counting in the stored window', () => {
    const [t0, t1, t2] = [1500, 900, 2000];
    runSteps(fixedWindow({ limit: 2, window: '1s' }), [
      { at: t0, times: 2, admitted: 2, expiresAt: 2000 },
      { at: t1, last: { allowed: false, retryAfterMs: 1100 }, expiresAt: 2000 },
      { at: t2, last: { allowed: true, remaining: 1 }, expiresAt: 3000 },
    ]);
  });

  it('a smaller limit counts the usage already in the window', () => {
    const [t0, t1, t2] = [0, 10, 1000];
    runSteps(
      [fixedWindow({ limit: 100, window: '1s' }), fixedWindow({ limit: 10, window: '1s' })],
      [
        { at: t0, times: 50, admitted: 50 },
        { at: t1, config: 1, last: { allowed: false, remaining: 0, retryAfterMs: 990 } },
        { at: t2, config: 1, times: 11, admitted: 10 },
      ],
    );
  });

  it('with countDenied, denials count too; the next window starts afresh', () => {
    const [t0, t1] = [0, 1000];
    runSteps(fixedWindow({ limit: 2, window: '1s', countDenied: true }), [
      { at: t0, times: 5, admitted: 2, last: { allowed: false, remaining: 0 } },
      { at: t1, times: 3, admitted: 2 },
    ]);
  });

  it('undo gives back units in the same window only', () => {
    const [t0, t1] = [0, 1000];
    runSteps(fixedWindow({ limit: 2, window: '1s' }), [
      { at: t0, times: 2, admitted: 2 },
      { at: t0, op: 'undo' },
      { at: t0, last: { allowed: true, remaining: 0 } },
      { at: t1, op: 'undo' },
      { at: t1, op: 'peek', last: { remaining: 2 } },
    ]);
  });

  it('expires at the end of its window: then it is the same as no state', () => {
    expectExpiry(fixedWindow({ limit: 3, window: '1s' }), { at: 200, cost: 3, expiresAt: 1000 });
  });
});

describeKindScenarios('fixed-window');
