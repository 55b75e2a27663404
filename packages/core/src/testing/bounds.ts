import fc from 'fast-check';
import { expect } from 'vitest';
import type { Algorithm } from '../algorithm.js';

/** One request of a random sequence: the time since the previous one (ms) and its cost. */
export interface Arrival {
  gap: number;
  cost: number;
}

/** An admitted request: its time (ms) and cost. */
export interface Admission {
  t: number;
  cost: number;
}

/** Runs a request sequence on a fresh key of the store under test and resolves to the admitted ones. */
export type Admit = (algorithm: Algorithm, sequence: readonly Arrival[]) => Promise<Admission[]>;

/** A bound an algorithm never breaks, checked over random request sequences (fast-check). */
export interface Bound {
  /** The claim, in words: the test's name. */
  readonly claim: string;
  /**
   * `slackMs`: how much earlier than reported an admission may really be (a reservation's slot is
   * reported to the ms, rounded up): spans between admissions are counted that much longer.
   */
  check(admit: Admit, numRuns: number, slackMs?: number): Promise<void>;
}

/** Random request sequences: 1 to 60 requests, 0 to 400 ms apart, costing 1 to `maxCost`. */
export const arrivals = (maxCost: number): fc.Arbitrary<Arrival[]> =>
  fc.array(fc.record({ gap: fc.integer({ min: 0, max: 400 }), cost: fc.integer({ min: 1, max: maxCost }) }), {
    minLength: 1,
    maxLength: 60,
  });

/**
 * A bound over configurations of `size` 1 to 10 (limit or capacity) and a second parameter drawn from
 * `parameter`; sequences whose costs exceed `size` are left out (they are rejected as bad input).
 */
function bound(
  claim: string,
  parameter: fc.Arbitrary<number>,
  make: (size: number, parameter: number) => Algorithm,
  holds: (admitted: Admission[], size: number, parameter: number, slackMs: number) => void,
): Bound {
  return {
    claim,
    check: (admit, numRuns, slackMs = 0) =>
      fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 10 }), parameter, arrivals(3), async (size, value, sequence) => {
          fc.pre(sequence.every((s) => s.cost <= size));
          holds(await admit(make(size, value), sequence), size, value, slackMs);
        }),
        { numRuns },
      ),
  };
}

/** At most `capacity + rate × T` units in any span of T ms, for a bucket of `capacity` and 1 to 20 units a second. */
export function burstPlusRate(claim: string, make: (capacity: number, perSecond: number) => Algorithm): Bound {
  return bound(claim, fc.integer({ min: 1, max: 20 }), make, (admitted, capacity, perSecond, slackMs) => {
    // In time order (reservations are admitted in order of arrival, not of slot).
    const sorted = [...admitted].sort((a, b) => a.t - b.t);
    for (let i = 0; i < sorted.length; i++) {
      let sum = 0;
      for (let j = i; j < sorted.length; j++) {
        sum += sorted[j]!.cost;
        expect(sum).toBeLessThanOrEqual(capacity + (perSecond * (sorted[j]!.t - sorted[i]!.t + slackMs)) / 1000 + 1e-6);
      }
    }
  });
}

/** At most `limit` units in any rolling window `(t − window, t]` ending at an admission (windows of 100 to 3000 ms). */
export function rollingWindow(claim: string, make: (limit: number, windowMs: number) => Algorithm): Bound {
  return bound(claim, fc.integer({ min: 100, max: 3000 }), make, (admitted, limit, windowMs) => {
    for (const { t } of admitted) {
      const sum = admitted.filter((a) => a.t > t - windowMs && a.t <= t).reduce((s, a) => s + a.cost, 0);
      expect(sum).toBeLessThanOrEqual(limit);
    }
  });
}

/** At most `limit` units in each aligned window `[k·window, (k+1)·window)` (windows of 100 to 3000 ms). */
export function alignedWindow(claim: string, make: (limit: number, windowMs: number) => Algorithm): Bound {
  return bound(claim, fc.integer({ min: 100, max: 3000 }), make, (admitted, limit, windowMs) => {
    const perWindow = new Map<number, number>();
    for (const a of admitted) {
      const w = Math.floor(a.t / windowMs);
      perWindow.set(w, (perWindow.get(w) ?? 0) + a.cost);
    }
    for (const sum of perWindow.values()) expect(sum).toBeLessThanOrEqual(limit);
  });
}
