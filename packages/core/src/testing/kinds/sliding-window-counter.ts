import { slidingWindowCounter } from '../../algorithms/sliding-window-counter.js';
import type { KindSuite } from '../scenario.js';

/** Sliding window counter: the two-window estimate (previous window weighted by what is left of it). */
export const slidingWindowCounterSuite: KindSuite = {
  kind: 'sliding-window-counter',
  samples: [(limit, windowMs) => slidingWindowCounter({ limit, window: windowMs })],
  scenarios: {
    seed: [
      {
        name: 'seed: sliding window counter, 100 per 1s',
        description: 'With 100 in the previous window, at 1.200 s the estimate is 100 × 0.8 = 80, so exactly 20 are admitted.',
        algorithms: [slidingWindowCounter({ limit: 100, window: '1s' })],
        steps: [
          { at: 990, times: 100, expect: { admitted: 100 } },
          { at: 1200, times: 100, expect: { admitted: 20, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 1800 } } },
        ],
      },
    ],
    cost: [
      {
        name: 'cost: sliding window counter, 10 per 1s',
        description: 'Costs add to the current window and weigh on the next.',
        algorithms: [slidingWindowCounter({ limit: 10, window: '1s' })],
        steps: [
          { at: 500, cost: 4, times: 3, expect: { admitted: 2, last: { remaining: 2 } } },
          { at: 1500, cost: 4, times: 2, expect: { admitted: 1, last: { allowed: false, remaining: 2 } } },
        ],
      },
    ],
    timing: [
      {
        name: 'timing: sliding window counter, 10 per 1s',
        description: 'retryAfterMs is when the previous window\'s weight has fallen enough.',
        algorithms: [slidingWindowCounter({ limit: 10, window: '1s' })],
        steps: [
          { at: 100, times: 10, expect: { admitted: 10 } },
          { at: 1500, times: 6, expect: { admitted: 5, last: { allowed: false, retryAfterMs: 100, remaining: 0 } } },
          { at: 1600, expect: { admitted: 1 } },
        ],
      },
    ],
    edge: [
      {
        name: 'edge: sliding counter at the window start',
        description: 'At the first instant of a window the previous count weighs fully; it fades linearly.',
        algorithms: [slidingWindowCounter({ limit: 10, window: '1s' })],
        steps: [
          { at: 0, times: 10, expect: { admitted: 10 } },
          { at: 1000, expect: { admitted: 0, last: { retryAfterMs: 100 } } },
          { at: 1100, expect: { admitted: 1 } },
          { at: 2999, op: 'peek', expect: { last: { remaining: 9 } } },
          { at: 3000, op: 'peek', expect: { last: { remaining: 10, resetMs: 0 } } },
        ],
      },
    ],
    clock: [
      {
        name: 'clock back: sliding window counter',
        description: 'An earlier time keeps the stored windows.',
        algorithms: [slidingWindowCounter({ limit: 2, window: '1s' })],
        steps: [
          { at: 1500, times: 2, expect: { admitted: 2 } },
          { at: 200, expect: { admitted: 0 } },
        ],
      },
    ],
  },
};
