import { describe, expect, test } from 'vitest';
import { CutResponse } from './cut-response.js';

/**
 * Runs of windows the controller cut after, min 5: the permits each window's work ran at, its median
 * latency, and the window read as unanswered (the latency did not fall with the work held; none: -1).
 */
const runs = [
  {
    name: 'a queue: half the work, half the wait',
    inFlight: [200, 160, 100, 60],
    latencyMs: [400, 320, 200, 150],
    at: -1,
  },
  {
    name: 'a slower backend (100 ms -> 150, no queue): the work halves, the latency stays',
    inFlight: [120, 100, 83, 69, 51, 50],
    latencyMs: [180, 150, 150, 150, 150, 150],
    at: 5,
  },
  {
    name: 'the latency fell once, then stayed: halved from where it fell',
    inFlight: [200, 100, 60, 50],
    latencyMs: [400, 300, 300, 299],
    at: 3,
  },
  {
    name: 'down to min (no cut goes further), the latency where it was',
    inFlight: [8, 7, 5],
    latencyMs: [150, 150, 150],
    at: 2,
  },
];

describe('CutResponse: whether the latency answers the cuts', () => {
  test.each(runs)('$name', ({ inFlight, latencyMs, at }) => {
    const cuts = new CutResponse();
    expect(inFlight.map((n, i) => cuts.unanswered(n, latencyMs[i]!, 5))).toEqual(inFlight.map((_, i) => i === at));
  });

  test('a window the controller did not cut after starts the run again', () => {
    const cuts = new CutResponse();
    expect(cuts.unanswered(100, 150, 5)).toBe(false);
    cuts.reset();
    expect(cuts.unanswered(50, 150, 5)).toBe(false);
    expect(cuts.unanswered(25, 150, 5)).toBe(true);
  });
});
