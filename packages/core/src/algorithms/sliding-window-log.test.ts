import { describe, expect, it } from 'vitest';
import { slidingWindowLog } from './sliding-window-log.js';
import type { LogState } from '../algorithm.js';
import { expectExpiry, runSteps } from '../testing/step-table.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';

describe('slidingWindowLog: at most `limit` units in the rolling window (now − window, now]', () => {
  it("the seed's two batches: the second is denied, and capacity comes back at exactly 1.990 s", () => {
    const [t0, t1, t2, t3] = [990, 1010, 1989, 1990];
    runSteps(slidingWindowLog({ limit: 100, window: '1s' }), [
      { at: t0, times: 100, admitted: 100, last: { remaining: 0, resetMs: 1000 } },
      { at: t1, times: 100, admitted: 0, last: { allowed: false, remaining: 0, retryAfterMs: 980, resetMs: 980 } },
      { at: t2, last: { allowed: false, retryAfterMs: 1 } },
      { at: t3, times: 100, admitted: 100, last: { remaining: 0, resetMs: 1000 }, expiresAt: 2990 },
      { at: t3, last: { allowed: false, retryAfterMs: 1000 } },
    ]);
  });

  it('the left edge is exclusive: a record exactly one window old no longer counts', () => {
    const [t0, t1, t2] = [0, 999, 1000];
    runSteps(slidingWindowLog({ limit: 1, window: '1s' }), [
      { at: t0, expiresAt: 1000 },
      { at: t1, last: { allowed: false, retryAfterMs: 1, resetMs: 1 } },
      { at: t2, last: { allowed: true, remaining: 0, resetMs: 1000 }, expiresAt: 2000 },
    ]);
  });

  it('records each admission with its cost, above 1 or fractional, until it leaves the window', () => {
    const [t0, t1, t2, t3] = [0, 100, 500, 1000];
    runSteps(slidingWindowLog({ limit: 10, window: '1s' }), [
      { at: t0, cost: 3.5, last: { allowed: true, remaining: 6 } },
      { at: t1, cost: 6.5, last: { allowed: true, remaining: 0 } },
      // The record of 3.5 at t0 is enough to leave: at 1000 a cost of 0.5 fits again.
      { at: t2, cost: 0.5, last: { allowed: false, retryAfterMs: 500, resetMs: 600 } },
      { at: t3, cost: 3.5, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a peek (commit false) decides without recording', () => {
    const [t0, t1] = [0, 10];
    runSteps(slidingWindowLog({ limit: 3, window: '1s' }), [
      { at: t0, times: 2, admitted: 2 },
      { at: t1, op: 'peek', cost: 1, times: 5, last: { allowed: true, remaining: 0 } },
      { at: t1, op: 'peek', cost: 2, last: { allowed: false, remaining: 1 } },
      { at: t1, times: 2, admitted: 1 },
    ]);
  });

  it('a clock that goes back drops no records and records at the newest stored time', () => {
    const [t0, t1, t2, t3] = [1000, 500, 1999, 2000];
    runSteps(slidingWindowLog({ limit: 3, window: '1s' }), [
      { at: t0, expiresAt: 2000 },
      // Admitted at 500, recorded at 1000: it leaves with the record of t0, not 500 ms earlier.
      { at: t1, last: { allowed: true, remaining: 1 }, expiresAt: 2000 },
      { at: t1, cost: 2, last: { allowed: false, retryAfterMs: 1500 } },
      { at: t2, op: 'peek', last: { remaining: 1 } },
      { at: t3, op: 'peek', last: { remaining: 3, resetMs: 0 } },
    ]);
  });

  it('a smaller limit counts the records already in the window', () => {
    const [t0, t1] = [0, 10];
    runSteps(
      [slidingWindowLog({ limit: 10, window: '1s' }), slidingWindowLog({ limit: 5, window: '1s' })],
      [
        { at: t0, times: 8, admitted: 8 },
        { at: t1, config: 1, last: { allowed: false, remaining: 0, retryAfterMs: 990 } },
      ],
    );
  });

  it('undo removes the newest record of that cost', () => {
    const [t0, t1, t2] = [0, 100, 200];
    runSteps(slidingWindowLog({ limit: 3, window: '1s' }), [
      { at: t0 },
      { at: t1, cost: 2, last: { remaining: 0 }, expiresAt: 1100 },
      { at: t2, op: 'undo', cost: 2, expiresAt: 1000 },
      { at: t2, op: 'peek', last: { remaining: 2, resetMs: 800 } },
    ]);
  });

  it('expires one window after its newest record, when every record has left', () => {
    expectExpiry(slidingWindowLog({ limit: 3, window: '1s' }), { at: 100, cost: 2, expiresAt: 1100 });
  });
});

describe('slidingWindowLog with countDenied', () => {
  it('adds one record for a flood of denials, and blocks until the last denial leaves', () => {
    const log = slidingWindowLog({ limit: 3, window: '1s', countDenied: true });
    let state: LogState = log.step(undefined, { now: 0, cost: 1, commit: true }).state;
    for (let t = 1; t < 5000; t++) {
      state = log.step(state, { now: t % 1000, cost: 1, commit: true }).state;
      expect(state.times.length - state.head).toBeLessThanOrEqual(4);
    }
    // The flood stopped at 999 (times never go back): every unit it recorded stays until 1999.
    expect(log.step(state, { now: 1998, cost: 1, commit: false }).decision.allowed).toBe(false);
    expect(log.step(state, { now: 1999, cost: 1, commit: false }).decision).toMatchObject({
      allowed: true,
      remaining: 2,
    });
    expect(state.sum).toBe(5000);
    expect(state.costs).toEqual([1, 1, 1, -4997]);
  });

  it('records each admitted request on its own, with its cost', () => {
    const log = slidingWindowLog({ limit: 10, window: '1s' });
    const { state } = log.step(undefined, { now: 0, cost: 3, commit: true });
    log.step(state, { now: 0, cost: 2, commit: true });
    expect(state.times).toEqual([0, 0]);
    expect(state.costs).toEqual([3, 2]);
  });
});

describe('slidingWindowLog record costs', () => {
  it('keeps no costs array while every record costs 1, and makes one with the first other cost', () => {
    const log = slidingWindowLog({ limit: 10, window: '1s' });
    const { state } = log.step(undefined, { now: 0, cost: 1, commit: true });
    log.step(state, { now: 10, cost: 1, commit: true });
    expect(state.costs).toBeNull();
    expect(log.step(state, { now: 20, cost: 2, commit: true }).decision.remaining).toBe(6);
    expect(state.costs).toEqual([1, 1, 2]);
    log.undo(state, { now: 30, cost: 2 });
    expect(state.times).toEqual([0, 10]);
    expect(state.sum).toBe(2);
    // Once every record has left the window, the state starts over without costs.
    expect(log.step(state, { now: 2000, cost: 1, commit: true }).decision.remaining).toBe(9);
    expect(state.costs).toBeNull();
  });

  it('undo of a unit record removes the newest one', () => {
    const log = slidingWindowLog({ limit: 3, window: '1s' });
    const { state } = log.step(undefined, { now: 0, cost: 1, commit: true });
    log.step(state, { now: 5, cost: 1, commit: true });
    log.undo(state, { now: 6, cost: 1 });
    expect(state.times).toEqual([0]);
    expect(log.step(state, { now: 6, cost: 0, commit: false }).decision.remaining).toBe(2);
  });
});

describeKindScenarios('sliding-window-log');
