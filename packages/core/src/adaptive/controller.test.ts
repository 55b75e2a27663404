import { describe, expect, test } from 'vitest';
import { InvalidOptionError } from '../errors.js';
import { aimdController, gradientController, type LatencyWindow } from './controller.js';

const window = (w: Partial<LatencyWindow>): LatencyWindow => ({
  limit: 100,
  minLatencyMs: 10,
  latencyMs: 10,
  samples: 10,
  failures: 0,
  peakInFlight: 100,
  ...w,
});

describe('gradientController', () => {
  test.each([
    ['at the baseline, limit filled, slow start: doubles', {}, 200],
    ['at the target (baseline x 1.25): keeps', { latencyMs: 12.5 }, 100],
    ['twice the target: halves', { latencyMs: 25 }, 50],
    ['far above: halves at most', { latencyMs: 1000 }, 50],
    ['limit not filled to half: keeps', { peakInFlight: 49 }, 100],
    ['failures: backs off by 0.9', { failures: 1 }, 90],
    ['only failures finished: backs off', { latencyMs: undefined, samples: 0, failures: 3 }, 90],
  ] as const)('%s', (_, w, next) => {
    expect(gradientController().next(window(w))).toBeCloseTo(next);
  });

  test.each([
    [
      'past the target, run at 80 of the 100 permits held now: latency x 1.25',
      { latencyMs: 15, concurrency: { ran: 80, now: 100 } },
      66.67,
    ],
    [
      'past the target, run at more permits than now: as measured',
      { latencyMs: 15, concurrency: { ran: 120, now: 100 } },
      83.33,
    ],
    ['at the target, fewer permits then than now: keeps', { latencyMs: 12.5, concurrency: { ran: 50, now: 100 } }, 100],
    ['at the baseline, fewer permits then than now: still a slow start', { concurrency: { ran: 50, now: 100 } }, 200],
    [
      'far past the target and run at a tenth: halves at most',
      { latencyMs: 15, concurrency: { ran: 10, now: 100 } },
      50,
    ],
  ] as const)('the permits the work ran at: %s', (_, w, next) => {
    expect(gradientController().next(window(w))).toBeCloseTo(next);
  });

  test('after the first queueing it grows by the gradient, until a new baseline restarts the slow start', () => {
    const c = gradientController();
    c.next(window({ latencyMs: 20 }));
    expect(c.next(window({}))).toBeCloseTo(125);
    c.rebase!();
    expect(c.next(window({}))).toBeCloseTo(200);
  });

  test('a limit filled to the sheddable share (half of the permits, rounded down) is filled: it grows', () => {
    // 175 permits: sheddable work is shed at 87 held; with the rest of the load under that, 87 is all it ever reaches.
    const c = gradientController();
    c.next(window({ latencyMs: 20 }));
    expect(c.next(window({ limit: 175.4, peakInFlight: 87 }))).toBeCloseTo(219.25);
    expect(c.next(window({ limit: 175.4, peakInFlight: 86 }))).toBeCloseTo(175.4);
  });

  test('bad options are typed errors', () => {
    expect(() => gradientController({ tolerance: 0 })).toThrow(InvalidOptionError);
    expect(() => gradientController({ backoff: 1 })).toThrow(InvalidOptionError);
    expect(() => gradientController({ buffer: 1 } as never)).toThrow(InvalidOptionError);
  });
});

describe('aimdController', () => {
  test.each([
    ['no drop, filled: adds 1', {}, 101],
    ['latency past twice the baseline: backs off', { latencyMs: 21 }, 90],
    ['a failure: backs off', { failures: 1 }, 90],
    ['not filled to half: keeps', { peakInFlight: 10 }, 100],
    ['filled to the sheddable share of 175 permits (87): adds 1', { limit: 175, peakInFlight: 87 }, 176],
  ] as const)('%s', (_, w, next) => {
    expect(aimdController().next(window(w))).toBeCloseTo(next);
  });

  test('bad options are typed errors', () => {
    expect(() => aimdController({ increase: -1 })).toThrow(InvalidOptionError);
  });
});
