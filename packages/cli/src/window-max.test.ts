import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxInWindow, maxUnitsInWindow, percentile } from './window-max.js';

/** The definition: for every start s, the times in [s, s + span); the best start is at some time. */
function bruteForce(times: readonly number[], span: number): number {
  let best = 0;
  for (const s of times) best = Math.max(best, times.filter((t) => t >= s && t < s + span).length);
  return best;
}

describe('maxInWindow: the most times in any span [s, s + span)', () => {
  it.each([
    [[], 1000, 0],
    [[5], 1000, 1],
    [[990, 990, 1010, 1010], 1000, 4],
    [[0, 1000], 1000, 1],
    [[0, 999.999], 1000, 2],
    [[0, 500, 1000, 1500], 1000, 2],
    [[0, 0, 0, 2000, 2000], 1, 3],
  ])('%j in %d ms: %d', (times, span, expected) => {
    expect(maxInWindow(Float64Array.from(times), span)).toBe(expected);
  });

  it('equals a brute force over every start (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5000 }), { maxLength: 200 }),
        fc.integer({ min: 1, max: 2000 }),
        (raw, span) => {
          const times = [...raw].sort((a, b) => a - b);
          expect(maxInWindow(Float64Array.from(times), span)).toBe(bruteForce(times, span));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('percentile: nearest rank', () => {
  it.each([
    [[], 50, 0],
    [[7], 99, 7],
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 75, 3],
    [[1, 2, 3, 4], 100, 4],
    [Array.from({ length: 100 }, (_, i) => i + 1), 99, 99],
  ])('%j p%d = %d', (sorted, p, expected) => {
    expect(percentile(Float64Array.from(sorted), p)).toBe(expected);
  });
});

describe('maxUnitsInWindow: the most units in any span [s, s + span)', () => {
  it.each([
    [[], [], 1000, 0],
    [[1010, 990], [0.5, 0.25], 1000, 0.75],
    [[0, 1000, 1500], [5, 1, 2], 1000, 5],
    [[0.1, 0.2, 0.3], [0.1, 0.2, 0.4], 1000, 0.7],
  ])('times %j costing %j, span %d: %d', (times, units, span, expected) => {
    expect(maxUnitsInWindow(times, units, span)).toBe(expected);
  });

  it('one cost for every time: the count times it', () => {
    expect(maxUnitsInWindow([990, 990, 1010, 1010], 2.5, 1000)).toBe(10);
  });
});
