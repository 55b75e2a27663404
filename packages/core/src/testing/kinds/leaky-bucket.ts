import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { burstPlusRate } from '../bounds.js';
import { range, seedBatches, type KindSuite } from '../scenario.js';

/** Leaky bucket (GCRA): the meter admits or denies at once; the shaper admits into a bounded queue with a delay. */
export const leakyBucketSuite: KindSuite = {
  kind: 'leaky-bucket',
  samples: [
    (limit, windowMs) => leakyBucket({ capacity: limit, leakRate: limit, interval: windowMs }),
    (limit, windowMs) => leakyBucket({ capacity: limit, leakRate: limit, interval: windowMs, mode: 'shape' }),
  ],
  scenarios: {
    seed: [
      {
        name: 'seed: shaping leaky bucket, 100 per second, queue 20',
        description:
          'The first batch fills the queue: 20 admitted with delays 0, 10, …, 190 ms. At 1.010 s arrivals queue before that instant\'s departure, so 2 more fit (delays 180 and 190 ms).',
        algorithms: [leakyBucket({ capacity: 20, leakRate: 100, interval: '1s', mode: 'shape' })],
        steps: seedBatches({ admitted: 20, delays: range(20, 10) }, { admitted: 2, delays: [180, 190], last: { allowed: false, retryAfterMs: 10 } }),
      },
      {
        name: 'seed: leaky bucket meter, capacity 20, 100 per second',
        description: 'The meter is the token bucket\'s dual: 20, then 2, all at once without delay.',
        algorithms: [leakyBucket({ capacity: 20, leakRate: 100, interval: '1s' })],
        steps: seedBatches({ admitted: 20, last: { delayMs: 0, retryAfterMs: 10 } }, { admitted: 2 }),
      },
    ],
    cost: [
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
    ],
    timing: [
      {
        name: 'timing: leaky bucket meter, capacity 2, 1 per second',
        description: 'retryAfterMs is when one unit has leaked; resetMs when the bucket is empty.',
        algorithms: [leakyBucket({ capacity: 2, leakRate: 1 })],
        steps: [
          { at: 0, times: 3, expect: { admitted: 2, last: { retryAfterMs: 1000, resetMs: 2000, remaining: 0 } } },
          { at: 1000, expect: { admitted: 1, last: { remaining: 0 } } },
        ],
      },
    ],
    clock: [
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
    ],
    configChange: [
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
    ],
  },
  loadTest: {
    // The seed's gateway queued for up to 500 ms and then answered 429; the shaper admits what its
    // queue can hold with a delay under 500 ms and denies the rest at once.
    name: "shaping leaky bucket, 200/s with a queue of 100: the seed's 500 ms queue, answered at once",
    algorithm: leakyBucket({ capacity: 100, leakRate: 200, mode: 'shape' }),
    expected: { warm: 500, perSecond: [298, 200, 200, 200, 200], maxDelay: 495 },
  },
  bounds: [burstPlusRate('a leaky bucket meter never admits more than capacity + rate × T in any span T', (capacity, perSecond) => leakyBucket({ capacity, leakRate: perSecond }))],
};
