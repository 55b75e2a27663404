import { describe, expect } from 'vitest';
import type { Admission, Admit } from '../bounds.js';
import { kindSuites } from '../scenarios.js';
import { checkSampledCases, freshPrefix, gatedIt, limiterOn, runsAll, samplesFor, type Suite } from './suite.js';

/** Each kind's bounds, and the decision fields every rate algorithm keeps in range, over random request sequences. */
export function describeProperties(suite: Suite): void {
  /** Runs the sequence from 10 s on one fresh key; the admitted requests with their times. */
  const admit: Admit = async (algorithm, sequence) => {
    let now = 10_000;
    const limiter = limiterOn(suite.store, algorithm, freshPrefix('prop'), () => now);
    const admitted: Admission[] = [];
    for (const { gap, cost } of sequence) {
      now += gap;
      if ((await limiter.consume('k', cost)).allowed) admitted.push({ t: now, cost });
    }
    return admitted;
  };

  describe('properties', () => {
    for (const { kind, bounds = [] } of kindSuites) {
      for (const bound of bounds)
        gatedIt(
          bound.claim,
          () => runsAll(suite.store, [kind]),
          () => bound.check(admit, suite.runs),
        );
    }

    gatedIt(
      'remaining is a whole number never below 0, and a denial always says when to retry',
      () => samplesFor(suite.store).length > 0,
      () =>
        checkSampledCases(suite, 'fields', async ({ limit, limiter, clock, sequence }) => {
          for (const { gap, cost } of sequence) {
            clock.now += gap;
            const d = await limiter.consume('k', cost);
            expect(Number.isInteger(d.remaining) && d.remaining >= 0 && d.remaining <= limit).toBe(true);
            // The RateLimit header's remaining never exceeds its policy's quota (a bucket's burst included).
            expect(d.remaining).toBeLessThanOrEqual(d.policy.quota);
            expect(Number.isInteger(d.resetMs) && d.resetMs >= 0).toBe(true);
            expect(Number.isInteger(d.delayMs) && d.delayMs >= 0).toBe(true);
            if (d.allowed) expect(d.retryAfterMs).toBe(0);
            else expect(d.retryAfterMs).toBeGreaterThanOrEqual(1);
          }
        }),
    );
  });
}
