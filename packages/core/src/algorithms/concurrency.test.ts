import { describe, it } from 'vitest';
import { runSteps } from '../testing/step-table.js';
import { concurrency } from './concurrency.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';

describe('concurrency: at most `limit` leases live at once per key, each expiring `lease` after it was taken', () => {
  it('a third request waits for a release or for the oldest lease to expire; a double release frees one permit', () => {
    const [t0, t1, t2, t3, t4, t5] = [0, 100, 200, 300, 400, 1100];
    runSteps(concurrency({ limit: 2, lease: '1s' }), [
      { at: t0, op: 'acquire', lease: 'a', last: { allowed: true, remaining: 1, resetMs: 1000 } },
      { at: t1, op: 'acquire', lease: 'b', last: { allowed: true, remaining: 0, resetMs: 1000 }, expiresAt: 1100 },
      // Denied: retry when the oldest lease (a, taken at t0) expires.
      { at: t2, op: 'acquire', lease: 'c', last: { allowed: false, remaining: 0, retryAfterMs: 800 } },
      { at: t3, op: 'release', lease: 'a' },
      { at: t3, op: 'acquire', lease: 'd', last: { allowed: true, remaining: 0 }, expiresAt: 1300 },
      { at: t4, op: 'release', lease: 'a' },
      { at: t4, op: 'acquire', lease: 'e', last: { allowed: false, retryAfterMs: 700 } },
      // b has expired at 1100: its permit is free without a release.
      { at: t5, op: 'acquire', lease: 'f', last: { allowed: true, remaining: 0 }, expiresAt: 2100 },
    ]);
  });

  it('acquiring a live lease id again renews it and takes no second permit', () => {
    const [t0, t1, t2] = [0, 500, 1400];
    runSteps(concurrency({ limit: 2, lease: '1s' }), [
      { at: t0, op: 'acquire', lease: 'a', last: { remaining: 1 } },
      { at: t1, op: 'acquire', lease: 'a', last: { allowed: true, remaining: 1, resetMs: 1000 }, expiresAt: 1500 },
      { at: t2, op: 'peek', last: { allowed: true, remaining: 1, resetMs: 100 } },
    ]);
  });

  it('a peek (commit false) reports the permits in use and writes nothing, not even the removal of expired leases', () => {
    const [t0, t1] = [0, 2000];
    runSteps(concurrency({ limit: 1, lease: '1s' }), [
      { at: t0, op: 'acquire', lease: 'a', expiresAt: 1000 },
      { at: t0, op: 'peek', last: { allowed: false, remaining: 0, retryAfterMs: 1000 } },
      { at: t1, op: 'peek', last: { allowed: true, remaining: 1, resetMs: 0 }, expiresAt: 1000 },
      { at: t1, op: 'acquire', lease: 'b', last: { allowed: true, remaining: 0 }, expiresAt: 3000 },
    ]);
  });
});

describeKindScenarios('concurrency');
