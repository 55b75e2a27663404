import { withBlock } from '../../algorithms/block.js';
import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { burstPlusRate } from '../bounds.js';
import { range, seedBatches, type KindSuite } from '../kind-suite.js';

// The bucket algorithms' suites: token bucket, leaky bucket (one `KindSuite` each, listed in
// `bucketSuites` at the end).

/** Token bucket: starts full, refills continuously, a denial takes nothing. */
export const tokenBucketSuite: KindSuite = {
  kind: 'token-bucket',
  samples: [(limit, windowMs) => tokenBucket({ capacity: limit, refillRate: limit, interval: windowMs })],
  configurations: [
    ({ limit, rate, windowMs }) => tokenBucket({ capacity: limit, refillRate: rate, interval: windowMs }),
  ],
  scenarios: {
    seed: [
      {
        name: 'seed: token bucket, capacity 20, 100 per second',
        description: 'The full bucket admits 20 of the first batch; 20 ms later 2 tokens have come back.',
        algorithms: [tokenBucket({ capacity: 20, refillRate: 100, interval: '1s' })],
        steps: seedBatches(
          { admitted: 20, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 200 } },
          { admitted: 2, last: { allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 200 } },
        ),
      },
    ],
    cost: [
      {
        name: 'cost: token bucket, capacity 20, 10 per second, export costs 5',
        description:
          'Four exports empty the bucket; the fifth waits for 5 tokens (500 ms); partial tokens never admit it early.',
        algorithms: [tokenBucket({ capacity: 20, refillRate: 10 })],
        steps: [
          { at: 0, cost: 5, times: 4, expect: { admitted: 4, last: { remaining: 0, resetMs: 2000 } } },
          { at: 0, cost: 5, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
          { at: 499, cost: 5, expect: { admitted: 0, last: { retryAfterMs: 1, remaining: 4 } } },
          { at: 500, cost: 5, expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 500, cost: 1, expect: { admitted: 0, last: { retryAfterMs: 100 } } },
        ],
      },
    ],
    timing: [
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
    ],
    clock: [
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
    ],
    state: [
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
    ],
    configChange: [
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
    ],
    giveBack: [
      {
        name: 'give-back: token bucket, capacity 2, 1 per second, a unit given back after the bucket refilled',
        description:
          'The bucket was full again before others drained it: the charge no longer weighs, so nothing comes back; right after its charge the whole cost does.',
        algorithms: [tokenBucket({ capacity: 2, refillRate: 1 })],
        steps: [
          { at: 0, name: 'early', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 1000, cost: 2, expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 1000, op: 'undo', of: 'early' },
          { at: 1000, op: 'peek', expect: { last: { remaining: 0, resetMs: 2000 } } },
          { at: 3000, name: 'fresh', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 3000, op: 'undo', of: 'fresh' },
          { at: 3000, op: 'peek', expect: { last: { remaining: 2, resetMs: 0 } } },
          { at: 5000, cost: 2, name: 'half', expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 5500, expect: { admitted: 0 } },
          { at: 5500, op: 'undo', cost: 2, of: 'half' },
          { at: 5500, op: 'peek', expect: { last: { remaining: 2 } } },
        ],
      },
    ],
    reservation: [
      {
        name: 'reservation: token bucket, capacity 2, 1 per second',
        description:
          'Reservations take tokens below 0 (Go ReserveN): the slot is when the balance is back at 0; one too far ahead is denied and takes nothing; a cancel with nothing reserved after it gives its token back.',
        algorithms: [tokenBucket({ capacity: 2, refillRate: 1 })],
        steps: [
          { at: 0, op: 'reserve', maxDelay: 1000, times: 2, expect: { admitted: 2, delays: [0, 0] } },
          {
            at: 0,
            op: 'reserve',
            maxDelay: 1000,
            name: 'r',
            expect: { admitted: 1, delays: [1000], last: { remaining: 0, resetMs: 3000 } },
          },
          { at: 0, op: 'reserve', maxDelay: 1000, expect: { admitted: 0, last: { retryAfterMs: 1000 } } },
          { at: 0, expect: { admitted: 0, last: { retryAfterMs: 2000 } } },
          { at: 500, op: 'reserve', maxDelay: 1000, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
          { at: 500, op: 'cancel', of: 'r' },
          { at: 500, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
          { at: 1000, expect: { admitted: 1, last: { remaining: 0 } } },
        ],
      },
      {
        name: 'reservation: token bucket, a cancel with a reservation after it',
        description:
          'The later reservation keeps its slot and the cancelled token stays with it (as Go Reservation.Cancel): a new reservation still queues behind it; after its slot a cancel gives nothing.',
        algorithms: [tokenBucket({ capacity: 2, refillRate: 1 })],
        steps: [
          { at: 0, times: 2, expect: { admitted: 2 } },
          { at: 0, op: 'reserve', maxDelay: 2000, name: 'a', expect: { delays: [1000] } },
          { at: 0, op: 'reserve', maxDelay: 2000, name: 'b', expect: { delays: [2000] } },
          { at: 100, op: 'cancel', of: 'a' },
          { at: 100, op: 'reserve', maxDelay: 2000, expect: { admitted: 0, last: { retryAfterMs: 900 } } },
          { at: 2500, op: 'cancel', of: 'b' },
          { at: 2500, expect: { admitted: 0, last: { retryAfterMs: 500 } } },
        ],
      },
    ],
  },
  lockouts: [
    {
      name: 'lockout: token bucket, capacity 2, 1 per second, a 10 s block',
      description:
        'The bucket is full again long before the block ends; the block decides until then, and then the full bucket.',
      algorithms: [withBlock(tokenBucket({ capacity: 2, refillRate: 1 }), 10_000)],
      steps: [
        { at: 0, times: 3, expect: { admitted: 2, last: { allowed: false, retryAfterMs: 10_000, resetMs: 10_000 } } },
        { at: 5_000, expect: { admitted: 0, last: { retryAfterMs: 5_000, resetMs: 5_000 } } },
        { at: 10_000, times: 3, expect: { admitted: 2, last: { allowed: false, retryAfterMs: 10_000 } } },
      ],
    },
  ],
  loadTest: {
    // First second: the 400 saved during the warm-up plus 2 tokens per 10 ms for 99 intervals.
    name: 'token bucket, 200/s with a burst of 400: the full bucket, then exactly the rate',
    algorithm: tokenBucket({ capacity: 400, refillRate: 200 }),
    expected: { warm: 500, perSecond: [598, 200, 200, 200, 200], maxDelay: 0 },
  },
  bounds: [
    burstPlusRate('a token bucket never admits more than capacity + rate × T in any span T', (capacity, perSecond) =>
      tokenBucket({ capacity, refillRate: perSecond }),
    ),
  ],
};

/** Leaky bucket (GCRA): the meter admits or denies at once; the shaper admits into a bounded queue with a delay. */
export const leakyBucketSuite: KindSuite = {
  kind: 'leaky-bucket',
  samples: [
    (limit, windowMs) => leakyBucket({ capacity: limit, leakRate: limit, interval: windowMs }),
    (limit, windowMs) => leakyBucket({ capacity: limit, leakRate: limit, interval: windowMs, mode: 'shape' }),
  ],
  configurations: [
    ({ limit, rate, windowMs }) => leakyBucket({ capacity: limit, leakRate: rate, interval: windowMs }),
    ({ limit, rate, windowMs }) => leakyBucket({ capacity: limit, leakRate: rate, interval: windowMs, mode: 'shape' }),
  ],
  scenarios: {
    seed: [
      {
        name: 'seed: shaping leaky bucket, 100 per second, queue 20',
        description:
          "The first batch fills the queue: 20 admitted with delays 0, 10, …, 190 ms. At 1.010 s arrivals queue before that instant's departure, so 2 more fit (delays 180 and 190 ms).",
        algorithms: [leakyBucket({ capacity: 20, leakRate: 100, interval: '1s', mode: 'shape' })],
        steps: seedBatches(
          { admitted: 20, delays: range(20, 10) },
          { admitted: 2, delays: [180, 190], last: { allowed: false, retryAfterMs: 10 } },
        ),
      },
      {
        name: 'seed: shaping leaky bucket, the second batch between two departures',
        description:
          'At 1.011 s three have left (0.990, 1.000, 1.010) and the one sent at 1.010 holds its slot until 1.020: the backlog is bounded, so 2 more fit (delays 179 and 189 ms), never a wait past 190 ms.',
        algorithms: [leakyBucket({ capacity: 20, leakRate: 100, interval: '1s', mode: 'shape' })],
        steps: [
          { at: 990, times: 100, expect: { admitted: 20, delays: range(20, 10) } },
          {
            at: 1011,
            times: 100,
            expect: { admitted: 2, delays: [179, 189], last: { allowed: false, retryAfterMs: 9 } },
          },
        ],
      },
      {
        name: 'seed: leaky bucket meter, capacity 20, 100 per second',
        description: "The meter is the token bucket's dual: 20, then 2, all at once without delay.",
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
      ...[
        { capacity: 1, leakRate: 6, mode: 'meter' },
        { capacity: 10, leakRate: 7, mode: 'meter' },
        { capacity: 10, leakRate: 7, mode: 'shape' },
        { capacity: 1000, leakRate: 6, mode: 'meter' },
        { capacity: 1000, leakRate: 60, mode: 'shape' },
      ].map(({ capacity, leakRate, mode }) => ({
        name: `timing: a leaky bucket ${mode} of ${capacity} at ${leakRate} per second, at a real clock’s time`,
        description:
          'At 1.7e12 ms a double holds a time to 2.4e-4 ms, and the slots a burst adds are rounded as they are added: a whole burst passes (one of a capacity of 1 was denied every time), the next is denied, and a request that fits after the burst has leaked passes.',
        algorithms: [leakyBucket({ capacity, leakRate, mode: mode as 'meter' | 'shape' })],
        steps: [
          { at: 1_700_000_000_000, times: capacity + 1, expect: { admitted: capacity, last: { allowed: false } } },
          { at: 1_700_000_000_000 + Math.ceil((capacity * 1000) / leakRate), expect: { admitted: 1 } },
        ],
      })),
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
    giveBack: [
      {
        name: 'give-back: leaky bucket meter, capacity 2, 1 per second, a unit given back after the bucket emptied',
        description:
          'The bucket had drained before another request came: the charge no longer weighs, so its slot stays taken; half a second after, half of it comes back.',
        algorithms: [leakyBucket({ capacity: 2, leakRate: 1 })],
        steps: [
          { at: 0, name: 'early', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 1000, expect: { admitted: 1, last: { remaining: 1, resetMs: 1000 } } },
          { at: 1000, op: 'undo', of: 'early' },
          { at: 1000, op: 'peek', expect: { last: { remaining: 1, resetMs: 1000 } } },
          { at: 1000, name: 'busy', expect: { admitted: 1, last: { remaining: 0, resetMs: 2000 } } },
          { at: 1500, op: 'undo', of: 'busy' },
          { at: 1500, op: 'peek', expect: { last: { remaining: 1, resetMs: 1000 } } },
        ],
      },
      {
        name: 'give-back: shaping leaky bucket, queue 5, one every 200 ms, two give-backs with a request queued behind each',
        description:
          "Nothing comes back while a later request keeps its slot behind the given-back one (one tat holds no hole): handing back the room before b's slot let c queue inside b's slot, and b's give-back, measured from its slot, then returned nearly all of it, 5 left at 650 ms where a queue that never had a and b has 4.",
        algorithms: [leakyBucket({ capacity: 5, leakRate: 5, interval: '1s', mode: 'shape' })],
        steps: [
          { at: 0, cost: 2, name: 'a', expect: { delays: [0] } },
          { at: 0, name: 'b', expect: { delays: [400] } },
          { at: 0, op: 'undo', cost: 2, of: 'a' },
          { at: 300, expect: { delays: [300] } },
          { at: 300, op: 'undo', of: 'b' },
          { at: 300, expect: { delays: [500] } },
          { at: 650, op: 'peek', expect: { last: { remaining: 3, resetMs: 350 } } },
        ],
      },
    ],
    reservation: [
      {
        name: 'reservation: leaky bucket meter, capacity 5, 10 per second',
        description:
          "A meter's reservation is the shaper's step (slots 100 ms apart); a consume still passes at once with the burst; a cancel of the last reservation gives its slot to the next one.",
        algorithms: [leakyBucket({ capacity: 5, leakRate: 10 })],
        steps: [
          { at: 0, op: 'reserve', maxDelay: 500, times: 2, expect: { delays: [0, 100] } },
          { at: 0, op: 'reserve', maxDelay: 500, name: 'third', expect: { delays: [200] } },
          { at: 0, op: 'reserve', maxDelay: 250, expect: { admitted: 0, last: { retryAfterMs: 50 } } },
          { at: 10, op: 'cancel', of: 'third' },
          { at: 10, op: 'reserve', maxDelay: 250, expect: { delays: [190] } },
          { at: 10, expect: { admitted: 1, last: { delayMs: 0 } } },
        ],
      },
      {
        name: 'reservation: shaping leaky bucket, capacity 5, 10 per second',
        description:
          "A shaper's consume is a reservation bounded by its queue; a reservation is bounded by its maxDelay too.",
        algorithms: [leakyBucket({ capacity: 5, leakRate: 10, mode: 'shape' })],
        steps: [
          { at: 0, times: 3, expect: { delays: [0, 100, 200] } },
          { at: 0, op: 'reserve', maxDelay: 250, expect: { admitted: 0, last: { retryAfterMs: 50 } } },
          { at: 0, expect: { delays: [300] } },
          { at: 0, op: 'reserve', maxDelay: 500, expect: { delays: [400] } },
          { at: 0, op: 'reserve', maxDelay: 500, expect: { admitted: 0, last: { retryAfterMs: 100 } } },
        ],
      },
    ],
  },
  lockouts: [
    {
      name: 'lockout: shaping leaky bucket, queue 2, 1 per second, a 3 s block',
      description: 'A full queue blocks the key; requests during the block are neither queued nor delayed.',
      algorithms: [withBlock(leakyBucket({ capacity: 2, leakRate: 1, mode: 'shape' }), 3_000)],
      steps: [
        { at: 0, times: 3, expect: { admitted: 2, delays: [0, 1_000], last: { retryAfterMs: 3_000 } } },
        { at: 2_500, expect: { admitted: 0, last: { retryAfterMs: 500, delayMs: 0 } } },
        { at: 3_000, expect: { admitted: 1, delays: [0] } },
      ],
    },
  ],
  loadTest: {
    // The seed's gateway queued for up to 500 ms and then answered 429; the shaper admits what its
    // queue can hold with a delay under 500 ms and denies the rest at once.
    name: "shaping leaky bucket, 200/s with a queue of 100: the seed's 500 ms queue, answered at once",
    algorithm: leakyBucket({ capacity: 100, leakRate: 200, mode: 'shape' }),
    expected: { warm: 500, perSecond: [298, 200, 200, 200, 200], maxDelay: 495 },
  },
  bounds: [
    burstPlusRate(
      'a leaky bucket meter never admits more than capacity + rate × T in any span T',
      (capacity, perSecond) => leakyBucket({ capacity, leakRate: perSecond }),
    ),
  ],
};

/** The bucket algorithms' suites, in the order of `ALGORITHM_KINDS`. */
export const bucketSuites: readonly KindSuite[] = [tokenBucketSuite, leakyBucketSuite];
