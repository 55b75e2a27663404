import { withBlock } from '../../algorithms/block.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { slidingWindowCounter } from '../../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { alignedWindow, rollingWindow } from '../bounds.js';
import { calendarWindowSuite } from './calendar.js';
import { seedBatches, type KindSuite, type Sample } from '../kind-suite.js';

// The window algorithms' suites: fixed window, sliding log, sliding counter (one `KindSuite` each,
// listed in `windowSuites` at the end).

const HOUR = 3_600_000;
const QUARTER = 900_000;

const fixedPerWindow: Sample = (limit, windowMs) => fixedWindow({ limit, window: windowMs });

/** Fixed window: `[start, end)` windows aligned on the clock, independent of each other. */
export const fixedWindowSuite: KindSuite = {
  kind: 'fixed-window',
  samples: [fixedPerWindow],
  configurations: [({ limit, windowMs, countDenied }) => fixedWindow({ limit, window: windowMs, countDenied })],
  scenarios: {
    seed: [
      {
        name: 'seed: fixed window, 100 per 1s',
        description: 'Both batches pass: they fall in different windows [0,1) and [1,2), 200 requests within 20 ms.',
        algorithms: [fixedWindow({ limit: 100, window: '1s' })],
        steps: seedBatches(
          { admitted: 100, last: { remaining: 0, resetMs: 10 } },
          { admitted: 100, last: { remaining: 0, resetMs: 990 } },
        ),
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
          {
            at: 250,
            times: 3,
            expect: { admitted: 2, last: { allowed: false, remaining: 0, resetMs: 750, retryAfterMs: 750 } },
          },
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
        description:
          'A denial just before the window ends still says to retry in at least 1 ms; at the end the next window admits.',
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
      {
        name: 'state: countDenied on a fixed window, a later window reserved',
        description:
          'A consume cannot take the reserved next window; counted, its denial takes room there, so its retry is the window after, where it passes (at the reserved window it would be denied again).',
        algorithms: [fixedWindow({ limit: 2, window: '1s', countDenied: true })],
        steps: [
          { at: 0, times: 2, expect: { admitted: 2 } },
          { at: 500, op: 'reserve', maxDelay: 1000, expect: { admitted: 1, delays: [500] } },
          { at: 500, expect: { admitted: 0, last: { retryAfterMs: 1500 } } },
          { at: 2000, expect: { admitted: 1 } },
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
    giveBack: [
      {
        name: 'give-back: fixed window, 2 per 1s, charged at 990 ms and given back at 1500 ms',
        description:
          'The window rolled over in between: the new window keeps its count; a give-back within its own window frees the unit.',
        algorithms: [fixedWindow({ limit: 2, window: '1s' })],
        steps: [
          { at: 990, name: 'late', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 1000, times: 2, expect: { admitted: 2, last: { remaining: 0 } } },
          { at: 1500, op: 'undo', of: 'late' },
          { at: 1500, op: 'peek', expect: { last: { remaining: 0 } } },
          { at: 1500, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
          { at: 2100, name: 'same', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 2900, op: 'undo', of: 'same' },
          { at: 2900, op: 'peek', expect: { last: { remaining: 2, resetMs: 0 } } },
        ],
      },
    ],
    reservation: [
      {
        name: 'reservation: fixed window, 2 per 1s',
        description:
          'A full window reserves the start of the next one when it is within maxDelay; a consume then waits behind it; a cancel frees its place in that window.',
        algorithms: [fixedWindow({ limit: 2, window: '1s' })],
        steps: [
          { at: 600, times: 2, expect: { admitted: 2 } },
          { at: 600, op: 'reserve', maxDelay: 100, expect: { admitted: 0, last: { retryAfterMs: 300 } } },
          { at: 600, op: 'reserve', maxDelay: 500, name: 'a', expect: { delays: [400], last: { remaining: 1 } } },
          { at: 600, expect: { admitted: 0, last: { retryAfterMs: 400 } } },
          { at: 600, op: 'reserve', maxDelay: 500, expect: { delays: [400], last: { remaining: 0 } } },
          { at: 600, op: 'reserve', maxDelay: 500, expect: { admitted: 0, last: { retryAfterMs: 900 } } },
          { at: 700, op: 'cancel', of: 'a' },
          { at: 700, op: 'reserve', maxDelay: 300, expect: { delays: [300] } },
          { at: 1000, expect: { admitted: 0, last: { retryAfterMs: 1000 } } },
        ],
      },
    ],
  },
  lockouts: [
    {
      name: 'lockout: brute force, fixed window 5 per 15 min, then a 1-hour block',
      description:
        'The sixth failed login at 1 min blocks the key until 61 min, across the windows in between; attempts during the block count for nothing.',
      algorithms: [withBlock(fixedWindow({ limit: 5, window: '15m' }), HOUR)],
      steps: [
        { at: 0, times: 5, expect: { admitted: 5, last: { remaining: 0 } } },
        {
          at: 60_000,
          expect: { admitted: 0, last: { allowed: false, remaining: 0, retryAfterMs: HOUR, resetMs: HOUR } },
        },
        { at: 120_000, op: 'peek', cost: 1, expect: { last: { allowed: false, retryAfterMs: HOUR - 60_000 } } },
        {
          at: QUARTER,
          times: 3,
          expect: {
            admitted: 0,
            last: { remaining: 0, retryAfterMs: HOUR + 60_000 - QUARTER, resetMs: HOUR + 60_000 - QUARTER },
          },
        },
        { at: HOUR + 30_000, times: 3, expect: { admitted: 0, last: { retryAfterMs: 30_000 } } },
        { at: HOUR + 59_999, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
        // The window [60 min, 75 min) holds nothing of the blocked attempts.
        { at: HOUR + 60_000, expect: { admitted: 1, last: { remaining: 4, resetMs: QUARTER - 60_000 } } },
        { at: HOUR + 60_000, times: 4, expect: { admitted: 4, last: { remaining: 0 } } },
        { at: HOUR + 70_000, expect: { admitted: 0, last: { retryAfterMs: HOUR } } },
        { at: HOUR + 80_000, op: 'reset' },
        { at: HOUR + 80_000, expect: { admitted: 1, last: { remaining: 4 } } },
      ],
    },
  ],
  loadTest: {
    name: 'fixed window, 200 per 1s: 200 in each window, whatever came before',
    algorithm: fixedWindow({ limit: 200, window: '1s' }),
    expected: { warm: 500, perSecond: [200, 200, 200, 200, 200], maxDelay: 0 },
  },
  bounds: [alignedWindow('a fixed window never admits more than the limit in one aligned window', fixedPerWindow)],
};

const logPerWindow: Sample = (limit, windowMs) => slidingWindowLog({ limit, window: windowMs });

/** Sliding window log: exact, over the rolling window `(now − window, now]`. */
export const slidingWindowLogSuite: KindSuite = {
  kind: 'sliding-window-log',
  samples: [logPerWindow],
  configurations: [({ limit, windowMs, countDenied }) => slidingWindowLog({ limit, window: windowMs, countDenied })],
  scenarios: {
    seed: [
      {
        name: 'seed: sliding window log, 100 per 1s',
        description:
          'The second batch is denied: (0.010, 1.010] still holds the first; capacity returns at exactly 1.990 s.',
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
        description:
          'A peek with a cost decides without recording, and reports remaining and reset as a consume would (its record one window on).',
        algorithms: [slidingWindowLog({ limit: 3, window: '1s' })],
        steps: [
          { at: 0, op: 'peek', cost: 1, expect: { last: { allowed: true, remaining: 2, resetMs: 1000 } } },
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
    giveBack: [
      {
        name: 'give-back: sliding window log, 2 per 1s, charged at 990 ms and given back at 1500 ms',
        description:
          'The record made at 990 ms is removed, not the later one of the same cost: capacity comes back when the later one leaves, at 2.200 s.',
        algorithms: [slidingWindowLog({ limit: 2, window: '1s' })],
        steps: [
          { at: 990, name: 'late', expect: { admitted: 1 } },
          { at: 1200, expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 1500, op: 'undo', of: 'late' },
          { at: 1500, op: 'peek', expect: { last: { remaining: 1, resetMs: 700 } } },
          { at: 1990, op: 'peek', expect: { last: { remaining: 1, resetMs: 210 } } },
          { at: 2200, op: 'peek', expect: { last: { remaining: 2, resetMs: 0 } } },
        ],
      },
      {
        name: 'give-back: sliding window log, a record that left the window',
        description:
          'A give-back after its record left the window gives nothing: the records made since keep counting.',
        algorithms: [slidingWindowLog({ limit: 2, window: '1s' })],
        steps: [
          { at: 0, name: 'old', expect: { admitted: 1 } },
          { at: 1500, times: 2, expect: { admitted: 2, last: { remaining: 0 } } },
          { at: 1600, op: 'undo', of: 'old' },
          { at: 1600, op: 'peek', expect: { last: { remaining: 0 } } },
        ],
      },
    ],
    reservation: [
      {
        name: 'reservation: sliding window log, 2 per 1s',
        description:
          'A reservation is recorded at the earliest time it fits (when the oldest records leave), never before the newest; a consume counts it; a cancel removes its record.',
        algorithms: [slidingWindowLog({ limit: 2, window: '1s' })],
        steps: [
          { at: 0, expect: { admitted: 1 } },
          { at: 400, expect: { admitted: 1 } },
          { at: 500, op: 'reserve', maxDelay: 600, expect: { delays: [500] } },
          { at: 500, op: 'reserve', maxDelay: 1000, name: 'second', expect: { delays: [900] } },
          { at: 500, expect: { admitted: 0, last: { retryAfterMs: 1500 } } },
          { at: 500, op: 'reserve', maxDelay: 1000, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
          { at: 600, op: 'cancel', of: 'second' },
          { at: 600, op: 'reserve', maxDelay: 1000, expect: { delays: [800] } },
        ],
      },
    ],
  },
  lockouts: [
    {
      name: 'lockout: sliding window log, 2 per 1s, a 5 s block',
      description:
        'The block outlasts the records: at 1.5 s the window is empty and the key still blocked; at 5.1 s it is free.',
      algorithms: [withBlock(slidingWindowLog({ limit: 2, window: '1s' }), 5_000)],
      steps: [
        { at: 0, times: 2, expect: { admitted: 2 } },
        { at: 100, expect: { admitted: 0, last: { retryAfterMs: 5_000, resetMs: 5_000 } } },
        { at: 1_500, expect: { admitted: 0, last: { retryAfterMs: 3_600, resetMs: 3_600, remaining: 0 } } },
        { at: 5_100, times: 3, expect: { admitted: 2, last: { retryAfterMs: 5_000 } } },
      ],
    },
  ],
  loadTest: {
    name: 'sliding window log, 200 per 1s: never more than 200 in any second',
    algorithm: slidingWindowLog({ limit: 200, window: '1s' }),
    expected: { warm: 500, perSecond: [200, 200, 200, 200, 200], maxDelay: 0 },
  },
  bounds: [rollingWindow('a sliding log never admits more than the limit in any window', logPerWindow)],
};

/** Sliding window counter: the two-window estimate (previous window weighted by what is left of it). */
export const slidingWindowCounterSuite: KindSuite = {
  kind: 'sliding-window-counter',
  samples: [(limit, windowMs) => slidingWindowCounter({ limit, window: windowMs })],
  configurations: [
    ({ limit, windowMs, countDenied }) => slidingWindowCounter({ limit, window: windowMs, countDenied }),
  ],
  scenarios: {
    seed: [
      {
        name: 'seed: sliding window counter, 100 per 1s',
        description:
          'With 100 in the previous window, at 1.200 s the estimate is 100 × 0.8 = 80, so exactly 20 are admitted.',
        algorithms: [slidingWindowCounter({ limit: 100, window: '1s' })],
        steps: [
          { at: 990, times: 100, expect: { admitted: 100 } },
          {
            at: 1200,
            times: 100,
            expect: { admitted: 20, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 1800 } },
          },
        ],
      },
    ],
    state: [
      {
        name: 'state: countDenied on a sliding window counter: a retry at the retry time passes',
        description:
          'Counted, each denial weighs on the estimate: the retry time counts it, so a client that waits exactly that long is admitted, not denied and counted again.',
        algorithms: [slidingWindowCounter({ limit: 1, window: '1s', countDenied: true })],
        steps: [
          { at: 600, expect: { admitted: 1 } },
          { at: 900, expect: { admitted: 0, last: { retryAfterMs: 1100 } } },
          { at: 1000, expect: { admitted: 0, last: { retryAfterMs: 2000 } } },
          { at: 3000, expect: { admitted: 1 } },
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
        description: "retryAfterMs is when the previous window's weight has fallen enough.",
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
    giveBack: [
      {
        name: 'give-back: sliding window counter, 2 per 1s, charged at 990 ms and given back at 1500 ms',
        description:
          'The unit goes back to the previous window it was charged in: the current window keeps its count, which weighs fully on the next window; a window two back is gone.',
        algorithms: [slidingWindowCounter({ limit: 2, window: '1s' })],
        steps: [
          { at: 990, name: 'late', expect: { admitted: 1 } },
          { at: 1000, expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 1500, op: 'undo', of: 'late' },
          { at: 1500, op: 'peek', expect: { last: { remaining: 1 } } },
          { at: 2000, op: 'peek', expect: { last: { remaining: 1, resetMs: 1000 } } },
          { at: 2100, name: 'now', expect: { admitted: 1, last: { remaining: 0 } } },
          // Two windows later the charge's window is gone: the new count stays.
          { at: 4100, expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 4200, op: 'undo', of: 'now' },
          { at: 4200, op: 'peek', expect: { last: { remaining: 1 } } },
        ],
      },
    ],
    reservation: [
      {
        name: 'reservation: sliding window counter, 10 per 1s',
        description:
          'A reservation gets the earliest time the estimate has room as the previous count fades; each one needs more room, so queues behind the last; a cancel frees its units in that window.',
        algorithms: [slidingWindowCounter({ limit: 10, window: '1s' })],
        steps: [
          { at: 0, times: 10, expect: { admitted: 10 } },
          { at: 1000, op: 'reserve', maxDelay: 500, expect: { delays: [100] } },
          { at: 1000, op: 'reserve', maxDelay: 500, name: 'second', expect: { delays: [200] } },
          { at: 1000, expect: { admitted: 0, last: { retryAfterMs: 300 } } },
          { at: 1000, op: 'reserve', maxDelay: 250, expect: { admitted: 0, last: { retryAfterMs: 50 } } },
          { at: 1050, op: 'cancel', of: 'second' },
          { at: 1050, op: 'reserve', maxDelay: 500, expect: { delays: [150] } },
        ],
      },
      {
        name: 'reservation: sliding window counter, into the next window',
        description:
          'With the current window full, the reservation goes where the next window has room; the current window then waits behind it.',
        algorithms: [slidingWindowCounter({ limit: 2, window: '1s' })],
        steps: [
          { at: 500, times: 2, expect: { admitted: 2 } },
          { at: 500, op: 'reserve', maxDelay: 1000, expect: { delays: [1000] } },
          { at: 600, expect: { admitted: 0, last: { retryAfterMs: 1400 } } },
          { at: 2000, expect: { admitted: 1 } },
        ],
      },
    ],
  },
  lockouts: [
    {
      name: 'lockout: sliding window counter, 2 per 1s, a 2 s block',
      description: 'A denial blocks the key; the block ends 2 s later whatever the estimate says.',
      algorithms: [withBlock(slidingWindowCounter({ limit: 2, window: '1s' }), 2_000)],
      steps: [
        { at: 500, times: 3, expect: { admitted: 2, last: { allowed: false, retryAfterMs: 2_000, resetMs: 2_000 } } },
        { at: 2_499, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
        { at: 2_500, expect: { admitted: 1, last: { remaining: 1 } } },
      ],
    },
  ],
};

/** The window algorithms' suites, in the order of `ALGORITHM_KINDS`. */
export const windowSuites: readonly KindSuite[] = [
  fixedWindowSuite,
  calendarWindowSuite,
  slidingWindowLogSuite,
  slidingWindowCounterSuite,
];
