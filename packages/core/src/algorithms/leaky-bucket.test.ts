import { describe, it } from 'vitest';
import { range } from '../testing/kind-suite.js';
import { expectExpiry, runSteps } from '../testing/step-table.js';
import { leakyBucket } from './leaky-bucket.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';

describe("leakyBucket({ mode: 'meter' }): GCRA, a request is admitted when start + cost·T − now ≤ capacity·T", () => {
  it("the seed's two batches: 20 at once, then the 2 that leaked in 20 ms, all without delay", () => {
    const [t0, t1] = [990, 1010];
    runSteps(leakyBucket({ capacity: 20, leakRate: 100, interval: '1s' }), [
      {
        at: t0,
        times: 100,
        admitted: 20,
        last: { allowed: false, delayMs: 0, retryAfterMs: 10, resetMs: 200 },
        expiresAt: 1190,
      },
      { at: t1, times: 100, admitted: 2, last: { allowed: false, delayMs: 0, retryAfterMs: 10 }, expiresAt: 1210 },
    ]);
  });

  it('costs above 1 and fractional costs take that many emission intervals', () => {
    const [t0, t1, t2] = [0, 500, 750];
    runSteps(leakyBucket({ capacity: 10, leakRate: 10 }), [
      { at: t0, cost: 5, times: 2, admitted: 2, last: { remaining: 0, resetMs: 1000 } },
      { at: t0, cost: 5, last: { allowed: false, retryAfterMs: 500 } },
      { at: t1, cost: 2.5, last: { allowed: true, remaining: 2, resetMs: 750 }, expiresAt: 1250 },
      { at: t2, cost: 5, last: { allowed: true, remaining: 0 } },
      { at: t2, cost: 0.5, last: { allowed: false, retryAfterMs: 50 } },
    ]);
  });

  it('a peek (commit false) decides without writing', () => {
    const t0 = 0;
    runSteps(leakyBucket({ capacity: 3, leakRate: 1 }), [
      { at: t0, cost: 2 },
      { at: t0, op: 'peek', cost: 1, times: 3, last: { allowed: true, remaining: 0 } },
      { at: t0, last: { allowed: true, remaining: 0 } },
    ]);
  });

  it('a clock that goes back within the free room never moves the theoretical arrival time back', () => {
    const [t0, t1, t2] = [1000, 500, 3000];
    runSteps(leakyBucket({ capacity: 4, leakRate: 1 }), [
      { at: t0, expiresAt: 2000 },
      // The slot starts at the stored 2000, not at 500.
      { at: t1, last: { allowed: true, remaining: 1, resetMs: 2500 }, expiresAt: 3000 },
      { at: t2, op: 'peek', last: { remaining: 4, resetMs: 0 } },
    ]);
  });

  it('a clock that goes back by more than the free room reads as a full bucket: denied, no unit added', () => {
    const [t0, t1] = [10_000, 5_000];
    runSteps(leakyBucket({ capacity: 2, leakRate: 1 }), [
      { at: t0, last: { allowed: true, remaining: 1 } },
      { at: t1, op: 'peek', cost: 1, last: { allowed: false, remaining: 0 } },
    ]);
  });

  it('a smaller capacity clamps the backlog to it: the bucket is full, not over-full', () => {
    const [t0, t1] = [0, 10];
    runSteps(
      [leakyBucket({ capacity: 100, leakRate: 100 }), leakyBucket({ capacity: 20, leakRate: 100 })],
      [
        { at: t0, times: 90, admitted: 90, expiresAt: 900 },
        { at: t0, config: 1, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 200 } },
        { at: t1, config: 1, last: { allowed: true, remaining: 0 }, expiresAt: 210 },
      ],
    );
  });

  it('undo gives back emission intervals, never into the past', () => {
    const [t0, t1] = [0, 500];
    runSteps(leakyBucket({ capacity: 4, leakRate: 2 }), [
      { at: t0, cost: 3, expiresAt: 1500 },
      { at: t0, op: 'undo', expiresAt: 1000 },
      { at: t1, op: 'undo', cost: 4, expiresAt: 500 },
      { at: t1, op: 'peek', last: { remaining: 4, resetMs: 0 } },
    ]);
  });

  it('expires when the bucket is empty again', () => {
    expectExpiry(leakyBucket({ capacity: 2, leakRate: 1 }), { at: 0, cost: 2, expiresAt: 2000 });
  });
});

describe("leakyBucket({ mode: 'shape' }): a bounded queue, one departure every T, delayMs until the request's slot", () => {
  it("the seed's two batches: 20 queued with delays 0 … 190 ms, then 2 more (arrivals queue before the instant's departure)", () => {
    const [t0, t1] = [990, 1010];
    runSteps(leakyBucket({ capacity: 20, leakRate: 100, interval: '1s', mode: 'shape' }), [
      { at: t0, times: 100, admitted: 20, delays: range(20, 10), last: { allowed: false, retryAfterMs: 10 } },
      { at: t1, times: 100, admitted: 2, delays: [180, 190], last: { allowed: false, retryAfterMs: 10 } },
    ]);
  });

  it('a request of cost c takes c departure slots', () => {
    const [t0, t1] = [0, 300];
    runSteps(leakyBucket({ capacity: 10, leakRate: 10, mode: 'shape' }), [
      { at: t0, cost: 5, times: 2, admitted: 2, delays: [0, 500] },
      { at: t0, last: { allowed: false, retryAfterMs: 100 } },
      { at: t1, cost: 3, admitted: 1, delays: [700] },
    ]);
  });

  it('never catches up missed slots: after an idle spell a burst is spread again', () => {
    const [t0, t1] = [0, 5000];
    runSteps(leakyBucket({ capacity: 5, leakRate: 10, mode: 'shape' }), [
      { at: t0, delays: [0] },
      { at: t1, times: 6, admitted: 5, delays: [0, 100, 200, 300, 400] },
    ]);
  });

  it('expires when the queue is empty again', () => {
    expectExpiry(leakyBucket({ capacity: 2, leakRate: 1, mode: 'shape' }), { at: 0, cost: 2, expiresAt: 2000 });
  });
});

describeKindScenarios('leaky-bucket');
