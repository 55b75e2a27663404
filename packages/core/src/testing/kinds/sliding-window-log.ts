import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { rollingWindow } from '../bounds.js';
import { seedBatches, type KindSuite, type Sample } from '../scenario.js';

const perWindow: Sample = (limit, windowMs) => slidingWindowLog({ limit, window: windowMs });

/** Sliding window log: exact, over the rolling window `(now − window, now]`. */
export const slidingWindowLogSuite: KindSuite = {
  kind: 'sliding-window-log',
  samples: [perWindow],
  scenarios: {
    seed: [
      {
        name: 'seed: sliding window log, 100 per 1s',
        description: 'The second batch is denied: (0.010, 1.010] still holds the first; capacity returns at exactly 1.990 s.',
        algorithms: [slidingWindowLog({ limit: 100, window: '1s' })],
        steps: [
          ...seedBatches({ admitted: 100 }, { admitted: 0, last: { allowed: false, retryAfterMs: 980, remaining: 0 } }),
          { at: 1989, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
          { at: 1990, times: 100, expect: { admitted: 100, last: { remaining: 0, resetMs: 1000 } } },
          { at: 1990, expect: { admitted: 0, last: { retryAfterMs: 1000 } } },
        ],
      },
    ],
    cost: [
      {
        name: 'cost: sliding window log, 10 per 1s',
        description: 'A record counts with its cost until it leaves the window.',
        algorithms: [slidingWindowLog({ limit: 10, window: '1s' })],
        steps: [
          { at: 0, cost: 5, expect: { admitted: 1 } },
          { at: 400, cost: 5, expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 500, cost: 1, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
          { at: 1000, cost: 5, expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 1000, cost: 1, expect: { admitted: 0, last: { retryAfterMs: 400 } } },
          { at: 1400, cost: 4, expect: { admitted: 1, last: { remaining: 1 } } },
        ],
      },
    ],
    timing: [
      {
        name: 'timing: sliding window log, 2 per 1s',
        description: 'retryAfterMs is when the oldest record leaves; resetMs when the newest does.',
        algorithms: [slidingWindowLog({ limit: 2, window: '1s' })],
        steps: [
          { at: 100, expect: { admitted: 1 } },
          { at: 400, expect: { admitted: 1 } },
          { at: 500, expect: { admitted: 0, last: { retryAfterMs: 600, resetMs: 900, remaining: 0 } } },
          { at: 1100, expect: { admitted: 1, last: { remaining: 0, resetMs: 1000 } } },
        ],
      },
    ],
    edge: [
      {
        name: 'edge: sliding log left edge is exclusive',
        description: 'A record exactly one window old no longer counts.',
        algorithms: [slidingWindowLog({ limit: 1, window: '1s' })],
        steps: [
          { at: 0, expect: { admitted: 1 } },
          { at: 999, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
          { at: 1000, expect: { admitted: 1 } },
        ],
      },
    ],
    clock: [
      {
        name: 'clock back: sliding window log',
        description: 'Going back drops no records and records nothing before the newest.',
        algorithms: [slidingWindowLog({ limit: 2, window: '1s' })],
        steps: [
          { at: 1000, times: 2, expect: { admitted: 2 } },
          { at: 100, expect: { admitted: 0 } },
          { at: 1999, expect: { admitted: 0 } },
          { at: 2000, times: 3, expect: { admitted: 2 } },
        ],
      },
    ],
    state: [
      {
        name: 'state: peek and reset on a sliding log',
        description: 'A peek with a cost decides without recording.',
        algorithms: [slidingWindowLog({ limit: 3, window: '1s' })],
        steps: [
          { at: 0, times: 2, expect: { admitted: 2 } },
          { at: 10, op: 'peek', cost: 1, times: 5, expect: { last: { allowed: true, remaining: 0 } } },
          { at: 20, times: 2, expect: { admitted: 1 } },
          { at: 30, op: 'reset' },
          { at: 30, times: 3, expect: { admitted: 3 } },
        ],
      },
      {
        name: 'state: countDenied on a sliding log',
        description: 'A recorded denial keeps counting until it leaves the window.',
        algorithms: [slidingWindowLog({ limit: 2, window: '1s', countDenied: true })],
        steps: [
          { at: 0, times: 2, expect: { admitted: 2 } },
          { at: 500, expect: { admitted: 0 } },
          { at: 1000, times: 2, expect: { admitted: 1 } },
        ],
      },
    ],
  },
  loadTest: {
    name: 'sliding window log, 200 per 1s: never more than 200 in any second',
    algorithm: slidingWindowLog({ limit: 200, window: '1s' }),
    expected: { warm: 500, perSecond: [200, 200, 200, 200, 200], maxDelay: 0 },
  },
  bounds: [rollingWindow('a sliding log never admits more than the limit in any window', perWindow)],
};
