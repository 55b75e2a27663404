import type { Algorithm } from '../algorithm.js';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';

/** Fields of a decision a step may check (compared against the last decision of the step). */
export interface ExpectedDecision {
  allowed?: boolean;
  remaining?: number;
  resetMs?: number;
  retryAfterMs?: number;
  delayMs?: number;
}

/** One step of a scenario: an operation at a time on the fake clock, repeated `times` times. */
export interface ScenarioStep {
  /** Clock time of the step, in ms. */
  at: number;
  /** Default `'consume'`. `acquire`/`release` are for concurrency scenarios. */
  op?: 'consume' | 'peek' | 'reset' | 'acquire' | 'release';
  /** Default `'k'`. */
  key?: string;
  /** Default 1 for consume, 0 for peek. */
  cost?: number;
  /** A batch: the step repeated this many times at the same instant, one after the other. Default 1. */
  times?: number;
  /** Which of the scenario's algorithms to use (a configuration change over the same state). Default 0. */
  algorithm?: number;
  /** Name of the lease taken by `acquire` or given back by `release`. */
  lease?: string;
  expect?: {
    /** How many of the batch were admitted. */
    admitted?: number;
    /** The `delayMs` of each admitted request, in order. */
    delays?: number[];
    /** Fields of the last decision of the batch. */
    last?: ExpectedDecision;
  };
}

export interface Scenario {
  name: string;
  /** What the scenario shows, in one sentence. */
  description: string;
  /** Algorithms used by the steps; all share one key namespace (index 1+ model a changed configuration). */
  algorithms: Algorithm[];
  steps: ScenarioStep[];
}

/** Request times of the seed's two batches: 100 requests at 0.990 s, then 100 at 1.010 s. */
const batches = (expectFirst: ScenarioStep['expect'], expectSecond: ScenarioStep['expect']): ScenarioStep[] => [
  { at: 990, times: 100, expect: expectFirst },
  { at: 1010, times: 100, expect: expectSecond },
];

const range = (n: number, step: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i * step);

/**
 * The seed's table (seeds/000, section 6): the same two batches through each algorithm, "100 per second".
 */
export const seedScenarios: Scenario[] = [
  {
    name: 'seed: fixed window, 100 per 1s',
    description: 'Both batches pass: they fall in different windows [0,1) and [1,2), 200 requests within 20 ms.',
    algorithms: [fixedWindow({ limit: 100, window: '1s' })],
    steps: batches({ admitted: 100, last: { remaining: 0, resetMs: 10 } }, { admitted: 100, last: { remaining: 0, resetMs: 990 } }),
  },
  {
    name: 'seed: sliding window log, 100 per 1s',
    description: 'The second batch is denied: (0.010, 1.010] still holds the first; capacity returns at exactly 1.990 s.',
    algorithms: [slidingWindowLog({ limit: 100, window: '1s' })],
    steps: [
      ...batches({ admitted: 100 }, { admitted: 0, last: { allowed: false, retryAfterMs: 980, remaining: 0 } }),
      { at: 1989, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
      { at: 1990, times: 100, expect: { admitted: 100, last: { remaining: 0, resetMs: 1000 } } },
      { at: 1990, expect: { admitted: 0, last: { retryAfterMs: 1000 } } },
    ],
  },
  {
    name: 'seed: token bucket, capacity 20, 100 per second',
    description: 'The full bucket admits 20 of the first batch; 20 ms later 2 tokens have come back.',
    algorithms: [tokenBucket({ capacity: 20, refillRate: 100, interval: '1s' })],
    steps: batches(
      { admitted: 20, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 200 } },
      { admitted: 2, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 200 } },
    ),
  },
  {
    name: 'seed: shaping leaky bucket, 100 per second, queue 20',
    description:
      'The first batch fills the queue: 20 admitted with delays 0, 10, …, 190 ms. At 1.010 s arrivals queue before that instant\'s departure, so 2 more fit (delays 180 and 190 ms).',
    algorithms: [leakyBucket({ capacity: 20, leakRate: 100, interval: '1s', mode: 'shape' })],
    steps: batches({ admitted: 20, delays: range(20, 10) }, { admitted: 2, delays: [180, 190], last: { allowed: false, retryAfterMs: 10 } }),
  },
  {
    name: 'seed: leaky bucket meter, capacity 20, 100 per second',
    description: 'The meter is the token bucket\'s dual: 20, then 2, all at once without delay.',
    algorithms: [leakyBucket({ capacity: 20, leakRate: 100, interval: '1s' })],
    steps: batches({ admitted: 20, last: { delayMs: 0, retryAfterMs: 10 } }, { admitted: 2 }),
  },
  {
    name: 'seed: sliding window counter, 100 per 1s',
    description: 'With 100 in the previous window, at 1.200 s the estimate is 100 × 0.8 = 80, so exactly 20 are admitted.',
    algorithms: [slidingWindowCounter({ limit: 100, window: '1s' })],
    steps: [
      { at: 990, times: 100, expect: { admitted: 100 } },
      { at: 1200, times: 100, expect: { admitted: 20, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 1800 } } },
    ],
  },
];

/** Costs: an export costing 5 beside requests costing 1. */
export const costScenarios: Scenario[] = [
  {
    name: 'cost: token bucket, capacity 20, 10 per second, export costs 5',
    description: 'Four exports empty the bucket; the fifth waits for 5 tokens (500 ms); partial tokens never admit it early.',
    algorithms: [tokenBucket({ capacity: 20, refillRate: 10 })],
    steps: [
      { at: 0, cost: 5, times: 4, expect: { admitted: 4, last: { remaining: 0, resetMs: 2000 } } },
      { at: 0, cost: 5, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
      { at: 499, cost: 5, expect: { admitted: 0, last: { retryAfterMs: 1, remaining: 4 } } },
      { at: 500, cost: 5, expect: { admitted: 1, last: { remaining: 0 } } },
      { at: 500, cost: 1, expect: { admitted: 0, last: { retryAfterMs: 100 } } },
    ],
  },
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
  {
    name: 'cost: sliding window counter, 10 per 1s',
    description: 'Costs add to the current window and weigh on the next.',
    algorithms: [slidingWindowCounter({ limit: 10, window: '1s' })],
    steps: [
      { at: 500, cost: 4, times: 3, expect: { admitted: 2, last: { remaining: 2 } } },
      { at: 1500, cost: 4, times: 2, expect: { admitted: 1, last: { allowed: false, remaining: 2 } } },
    ],
  },
  {
    name: 'cost: leaky bucket meter, capacity 10, 10 per second',
    description: 'Costs fill the bucket; it drains at 10 per second.',
    algorithms: [leakyBucket({ capacity: 10, leakRate: 10 })],
    steps: [
      { at: 0, cost: 5, times: 2, expect: { admitted: 2, last: { remaining: 0, resetMs: 1000 } } },
      { at: 0, cost: 5, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
      { at: 500, cost: 5, expect: { admitted: 1 } },
    ],
  },
  {
    name: 'cost: shaping leaky bucket, queue 10, 10 per second',
    description: 'A request of cost 5 takes 5 departure slots: the next one starts 500 ms later.',
    algorithms: [leakyBucket({ capacity: 10, leakRate: 10, mode: 'shape' })],
    steps: [
      { at: 0, cost: 5, times: 2, expect: { admitted: 2, delays: [0, 500] } },
      { at: 0, cost: 1, expect: { admitted: 0, last: { retryAfterMs: 100 } } },
      { at: 300, cost: 3, expect: { admitted: 1, delays: [700] } },
    ],
  },
];

/** Retry-after and reset values, to the millisecond. */
export const timingScenarios: Scenario[] = [
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
  {
    name: 'timing: token bucket, capacity 1, 1 per second',
    description: 'retryAfterMs is the time for the missing tokens to refill.',
    algorithms: [tokenBucket({ capacity: 1, refillRate: 1 })],
    steps: [
      { at: 0, expect: { admitted: 1, last: { remaining: 0, resetMs: 1000 } } },
      { at: 300, expect: { admitted: 0, last: { retryAfterMs: 700, resetMs: 700 } } },
      { at: 1000, expect: { admitted: 1 } },
    ],
  },
  {
    name: 'timing: token bucket, 3 per second (fractional refill)',
    description: 'A third of a token per 333.3 ms is kept across calls, never rounded away.',
    algorithms: [tokenBucket({ capacity: 3, refillRate: 3 })],
    steps: [
      { at: 0, times: 3, expect: { admitted: 3 } },
      { at: 200, expect: { admitted: 0, last: { retryAfterMs: 134 } } },
      { at: 334, expect: { admitted: 1, last: { remaining: 0 } } },
      { at: 667, expect: { admitted: 1 } },
    ],
  },
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
  {
    name: 'timing: leaky bucket meter, capacity 2, 1 per second',
    description: 'retryAfterMs is when one unit has leaked; resetMs when the bucket is empty.',
    algorithms: [leakyBucket({ capacity: 2, leakRate: 1 })],
    steps: [
      { at: 0, times: 3, expect: { admitted: 2, last: { retryAfterMs: 1000, resetMs: 2000, remaining: 0 } } },
      { at: 1000, expect: { admitted: 1, last: { remaining: 0 } } },
    ],
  },
];

/** Window edges: `[start, end)` for fixed windows, a left edge that is exclusive for the log. */
export const edgeScenarios: Scenario[] = [
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
    name: 'edge: sliding log left edge is exclusive',
    description: 'A record exactly one window old no longer counts.',
    algorithms: [slidingWindowLog({ limit: 1, window: '1s' })],
    steps: [
      { at: 0, expect: { admitted: 1 } },
      { at: 999, expect: { admitted: 0, last: { retryAfterMs: 1 } } },
      { at: 1000, expect: { admitted: 1 } },
    ],
  },
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
];

/** The clock going backwards: no tokens are added, stored time never moves back. */
export const clockScenarios: Scenario[] = [
  {
    name: 'clock back: token bucket',
    description: 'A call at an earlier time adds nothing, and does not move the refill time back.',
    algorithms: [tokenBucket({ capacity: 2, refillRate: 1 })],
    steps: [
      { at: 1000, times: 2, expect: { admitted: 2 } },
      { at: 0, expect: { admitted: 0, last: { retryAfterMs: 2000 } } },
      { at: 1500, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
      { at: 2000, times: 2, expect: { admitted: 1 } },
    ],
  },
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
  {
    name: 'clock back: leaky bucket meter',
    description: 'The theoretical arrival time never moves back.',
    algorithms: [leakyBucket({ capacity: 1, leakRate: 1 })],
    steps: [
      { at: 1000, expect: { admitted: 1 } },
      { at: 500, expect: { admitted: 0 } },
      { at: 2000, expect: { admitted: 1 } },
    ],
  },
  {
    name: 'clock back: sliding window counter',
    description: 'An earlier time keeps the stored windows.',
    algorithms: [slidingWindowCounter({ limit: 2, window: '1s' })],
    steps: [
      { at: 1500, times: 2, expect: { admitted: 2 } },
      { at: 200, expect: { admitted: 0 } },
    ],
  },
];

/** Peek writes nothing, reset forgets, countDenied counts denials. */
export const stateScenarios: Scenario[] = [
  {
    name: 'state: peek and reset on a token bucket',
    description: 'Peeks report without consuming; reset starts the key afresh.',
    algorithms: [tokenBucket({ capacity: 5, refillRate: 1 })],
    steps: [
      { at: 0, times: 2, expect: { admitted: 2 } },
      { at: 0, op: 'peek', times: 3, expect: { last: { allowed: true, remaining: 3, resetMs: 2000 } } },
      { at: 0, op: 'peek', cost: 4, expect: { last: { allowed: false, retryAfterMs: 1000 } } },
      { at: 0, times: 4, expect: { admitted: 3 } },
      { at: 0, op: 'reset' },
      { at: 0, times: 6, expect: { admitted: 5 } },
      { at: 0, key: 'other', times: 5, expect: { admitted: 5 } },
    ],
  },
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
    name: 'state: countDenied on a fixed window',
    description: 'Denied attempts are counted too (login brute force); the next window starts afresh.',
    algorithms: [fixedWindow({ limit: 2, window: '1s', countDenied: true })],
    steps: [
      { at: 0, times: 5, expect: { admitted: 2, last: { remaining: 0 } } },
      { at: 1000, times: 3, expect: { admitted: 2 } },
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
];

/** A changed configuration over existing state: balances are clamped, never refilled. */
export const configChangeScenarios: Scenario[] = [
  {
    name: 'config change: token bucket capacity 100 → 20',
    description: 'A bucket with 5 tokens left keeps 5; a full one is clamped to 20, not handed 100.',
    algorithms: [tokenBucket({ capacity: 100, refillRate: 1 }), tokenBucket({ capacity: 20, refillRate: 1 })],
    steps: [
      { at: 0, times: 95, expect: { admitted: 95 } },
      { at: 0, algorithm: 1, times: 6, expect: { admitted: 5 } },
      { at: 0, key: 'full', times: 1, expect: { admitted: 1, last: { remaining: 99 } } },
      { at: 0, key: 'full', algorithm: 1, expect: { admitted: 1, last: { remaining: 19 } } },
    ],
  },
  {
    name: 'config change: fixed window limit 100 → 10',
    description: 'Usage already in the window counts against the new limit.',
    algorithms: [fixedWindow({ limit: 100, window: '1s' }), fixedWindow({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, times: 50, expect: { admitted: 50 } },
      { at: 10, algorithm: 1, expect: { admitted: 0, last: { remaining: 0 } } },
    ],
  },
  {
    name: 'config change: leaky bucket meter capacity 100 → 20',
    description: 'A backlog larger than the new capacity is clamped to it: the bucket is full, not over-full.',
    algorithms: [leakyBucket({ capacity: 100, leakRate: 100 }), leakyBucket({ capacity: 20, leakRate: 100 })],
    steps: [
      { at: 0, times: 90, expect: { admitted: 90 } },
      { at: 0, algorithm: 1, expect: { admitted: 0, last: { retryAfterMs: 10 } } },
      { at: 10, algorithm: 1, expect: { admitted: 1 } },
    ],
  },
];

/** Concurrency permits: taken, released once, expiring with their lease. */
export const concurrencyScenarios: Scenario[] = [
  {
    name: 'concurrency: 2 permits, lease 1s',
    description: 'A third request waits for a release or for the oldest lease to expire; a double release frees one permit only.',
    algorithms: [concurrency({ limit: 2, lease: '1s' })],
    steps: [
      { at: 0, op: 'acquire', lease: 'a', expect: { admitted: 1, last: { remaining: 1 } } },
      { at: 100, op: 'acquire', lease: 'b', expect: { admitted: 1, last: { remaining: 0 } } },
      { at: 200, op: 'acquire', lease: 'c', expect: { admitted: 0, last: { retryAfterMs: 800 } } },
      { at: 300, op: 'release', lease: 'a' },
      { at: 300, op: 'acquire', lease: 'd', expect: { admitted: 1 } },
      { at: 400, op: 'acquire', lease: 'e', expect: { admitted: 0, last: { retryAfterMs: 700 } } },
      { at: 400, op: 'release', lease: 'a' },
      { at: 400, op: 'acquire', lease: 'e', expect: { admitted: 0 } },
      { at: 1100, op: 'acquire', lease: 'f', expect: { admitted: 1, last: { remaining: 0 } } },
    ],
  },
];

/** Every scenario table, in order. */
export const scenarios: Scenario[] = [
  ...seedScenarios,
  ...costScenarios,
  ...timingScenarios,
  ...edgeScenarios,
  ...clockScenarios,
  ...stateScenarios,
  ...configChangeScenarios,
  ...concurrencyScenarios,
];
