import { describe, expect, test } from 'vitest';
import { CutResponse } from './cut-response.js';

/** A run of windows the controller cut after: [permits the work ran at, its median latency, whether it reads as unanswered]. */
type Step = readonly [inFlight: number, latencyMs: number, unanswered: boolean];

describe('CutResponse: whether the latency answers the cuts (min 5)', () => {
  test.each([
    [
      'a queue: half the work, half the wait',
      [
        [200, 400, false],
        [160, 320, false],
        [100, 200, false],
        [60, 150, false],
      ],
    ],
    [
      'a slower backend (100 ms -> 150, no queue): the work halves, the latency stays',
      [
        [120, 180, false],
        [100, 150, false],
        [83, 150, false],
        [69, 150, false],
        [51, 150, false],
        [50, 150, true],
      ],
    ],
    [
      'the latency fell once, then stayed: halved from where it fell',
      [
        [200, 400, false],
        [100, 300, false],
        [60, 300, false],
        [50, 299, true],
      ],
    ],
    [
      'down to min (no cut goes further), the latency where it was',
      [
        [8, 150, false],
        [7, 150, false],
        [5, 150, true],
      ],
    ],
  ] as const)('%s', (_, steps: readonly Step[]) => {
    const cuts = new CutResponse();
    expect(steps.map(([inFlight, latency]) => cuts.unanswered(inFlight, latency, 5))).toEqual(
      steps.map(([, , unanswered]) => unanswered),
    );
  });

  test('a window the controller did not cut after starts the run again', () => {
    const cuts = new CutResponse();
    expect(cuts.unanswered(100, 150, 5)).toBe(false);
    cuts.reset();
    expect(cuts.unanswered(50, 150, 5)).toBe(false);
    expect(cuts.unanswered(25, 150, 5)).toBe(true);
  });
});
