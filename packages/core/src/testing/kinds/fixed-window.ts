import { fixedWindow } from '../../algorithms/fixed-window.js';
import { alignedWindow } from '../bounds.js';
import { seedBatches, type KindSuite, type Sample } from '../scenario.js';

const perWindow: Sample = (limit, windowMs) => fixedWindow({ limit, window: windowMs });

/** Fixed window: `[start, end)` windows aligned on the clock, independent of each other. */
export const fixedWindowSuite: KindSuite = {
  kind: 'fixed-window',
  samples: [perWindow],
  scenarios: {
    seed: [
      {
        name: 'seed: fixed window, 100 per 1s',
        description: 'Both batches pass: they fall in different windows [0,1) and [1,2), 200 requests within 20 ms.',
        algorithms: [fixedWindow({ limit: 100, window: '1s' })],
        steps: seedBatches({ admitted: 100, last: { remaining: 0, resetMs: 10 } }, { admitted: 100, last: { remaining: 0, resetMs: 990 } }),
      },
    ],
    cost: [
      {
        name: 'cost: fixed window, 10 per 1s',
        description: 'Two exports fill the window; even a cost of 1 then waits for the next window.',
        algorithms: [fixedWindow({ limit: 10, window: '1s' })],
        steps: [
          { at: 0, cost: 5, times: 2, expect: { admitted: 2 } },
          { at: 0, cost: 5, expect: { admitted: 0, last: { retryAfterMs: 1000 } } },
          { at: 600, cost: 1, expect: { admitted: 0, last: { retryAfterMs: 400 } } },
          { at: 1000, cost: 5, expect: { admitted: 1, last: { remaining: 5 } } },
        ],
      },
    ],
    timing: [
      {
        name: 'timing: fixed window, 3 per 1s',
        description: 'retryAfterMs and resetMs count to the end of the window.',
        algorithms: [fixedWindow({ limit: 3, window: '1s' })],
        steps: [
          { at: 250, expect: { admitted: 1, last: { remaining: 2, resetMs: 750 } } },
          { at: 250, times: 3, expect: { admitted: 2, last: { allowed: false, remaining: 0, resetMs: 750, retryAfterMs: 750 } } },
          { at: 2000, op: 'peek', expect: { last: { allowed: true, remaining: 3, resetMs: 0, retryAfterMs: 0 } } },
        ],
      },
    ],
    edge: [
      {
        name: 'edge: fixed window boundary',
        description: 'A request at exactly 1.000 s belongs to the second window.',
        algorithms: [fixedWindow({ limit: 1, window: '1s' })],
        steps: [
          { at: 999, expect: { admitted: 1 } },
          { at: 999, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
          { at: 1000, expect: { admitted: 1, last: { resetMs: 1000 } } },
        ],
      },
      {
        name: 'edge: fixed window, a fraction of a microsecond before the end',
        description: 'A denial just before the window ends still says to retry in at least 1 ms; at the end the next window admits.',
        algorithms: [fixedWindow({ limit: 1, window: 1000 })],
        steps: [
          { at: 999.9999999999, expect: { admitted: 1 } },
          { at: 999.9999999999, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
          { at: 1000, expect: { admitted: 1 } },
        ],
      },
    ],
    clock: [
      {
        name: 'clock back: fixed window',
        description: 'A call that falls back into an earlier window keeps counting in the stored window.',
        algorithms: [fixedWindow({ limit: 2, window: '1s' })],
        steps: [
          { at: 1500, times: 2, expect: { admitted: 2 } },
          { at: 900, expect: { admitted: 0 } },
          { at: 2000, expect: { admitted: 1 } },
        ],
      },
    ],
    state: [
      {
        name: 'state: countDenied on a fixed window',
        description: 'Denied attempts are counted too (login brute force); the next window starts afresh.',
        algorithms: [fixedWindow({ limit: 2, window: '1s', countDenied: true })],
        steps: [
          { at: 0, times: 5, expect: { admitted: 2, last: { remaining: 0 } } },
          { at: 1000, times: 3, expect: { admitted: 2 } },
        ],
      },
    ],
    configChange: [
      {
        name: 'config change: fixed window limit 100 → 10',
        description: 'Usage already in the window counts against the new limit.',
        algorithms: [fixedWindow({ limit: 100, window: '1s' }), fixedWindow({ limit: 10, window: '1s' })],
        steps: [
          { at: 0, times: 50, expect: { admitted: 50 } },
          { at: 10, algorithm: 1, expect: { admitted: 0, last: { remaining: 0 } } },
        ],
      },
    ],
  },
  loadTest: {
    name: 'fixed window, 200 per 1s: 200 in each window, whatever came before',
    algorithm: fixedWindow({ limit: 200, window: '1s' }),
    expected: { warm: 500, perSecond: [200, 200, 200, 200, 200], maxDelay: 0 },
  },
  bounds: [alignedWindow('a fixed window never admits more than the limit in one aligned window', perWindow)],
};
