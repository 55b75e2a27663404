import { describe, expect, it } from 'vitest';
import { decisionFromExact, makeDecision, makePolicy } from './decision.js';

const policy = makePolicy(10, 1_000);

describe('decisionFromExact and makeDecision: one decision shape from two records', () => {
  it('give the same fields in the same order (one object shape for every decision of the library)', () => {
    const exact = decisionFromExact({
      allowed: false,
      remaining: 2.5,
      resetInMs: 999.2,
      retryInMs: 0.3,
      delayInMs: 0,
      limit: 10,
      policy,
      at: 1_700_000_000_123.5,
    });
    const made = makeDecision({
      at: 1_700_000_000_123.5,
      policy,
      delayMs: 0,
      retryAfterMs: 1,
      resetMs: 1_000,
      remaining: 2,
      limit: 10,
      allowed: false,
    });
    expect(Object.keys(exact)).toEqual([
      'allowed',
      'limit',
      'remaining',
      'resetMs',
      'retryAfterMs',
      'delayMs',
      'policy',
      'at',
    ]);
    expect(Object.keys(made)).toEqual(Object.keys(exact));
    expect(exact).toEqual(made);
  });

  it('decisionFromExact rounds as the Decision contract says: units down, times up, a denial waits at least 1 ms, an admission not at all', () => {
    const admitted = decisionFromExact({
      allowed: true,
      remaining: -0.5,
      resetInMs: 1e-10,
      retryInMs: 500,
      delayInMs: 20.000000000001,
      limit: 10,
      policy,
      at: 7,
    });
    expect(admitted).toEqual(
      makeDecision({ allowed: true, limit: 10, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 20, policy, at: 7 }),
    );
    const denied = decisionFromExact({
      allowed: false,
      remaining: 3.9999999999,
      resetInMs: 10.5,
      retryInMs: 0,
      delayInMs: 0,
      limit: 10,
      policy,
      at: 7,
    });
    expect(denied).toMatchObject({ remaining: 4, resetMs: 11, retryAfterMs: 1, delayMs: 0 });
  });
});
