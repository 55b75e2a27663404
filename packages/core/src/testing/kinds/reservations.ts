import { fixedWindow } from '../../algorithms/fixed-window.js';
import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import type { Scenario } from '../kind-suite.js';

// The reservation tables of every rate algorithm (each kind suite's `reservation` group): where a
// reservation's slot is, that later requests queue behind it, what a denial says, and what a cancel
// gives back. One file for the five: the same questions, asked of each algorithm at named times.

export const tokenBucketReservations: Scenario[] = [
  {
    name: 'reservation: token bucket, capacity 2, 1 per second',
    description: 'Reservations take tokens below 0 (Go ReserveN): the slot is when the balance is back at 0; one too far ahead is denied and takes nothing; a cancel with nothing reserved after it gives its token back.',
    algorithms: [tokenBucket({ capacity: 2, refillRate: 1 })],
    steps: [
      { at: 0, op: 'reserve', maxDelay: 1000, times: 2, expect: { admitted: 2, delays: [0, 0] } },
      { at: 0, op: 'reserve', maxDelay: 1000, name: 'r', expect: { admitted: 1, delays: [1000], last: { remaining: 0, resetMs: 3000 } } },
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
    description: 'The later reservation keeps its slot and the cancelled token stays with it (as Go Reservation.Cancel): a new reservation still queues behind it; after its slot a cancel gives nothing.',
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
];

export const leakyBucketReservations: Scenario[] = [
  {
    name: 'reservation: leaky bucket meter, capacity 5, 10 per second',
    description: "A meter's reservation is the shaper's step (slots 100 ms apart); a consume still passes at once with the burst; a cancel of the last reservation gives its slot to the next one.",
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
    description: "A shaper's consume is a reservation bounded by its queue; a reservation is bounded by its maxDelay too.",
    algorithms: [leakyBucket({ capacity: 5, leakRate: 10, mode: 'shape' })],
    steps: [
      { at: 0, times: 3, expect: { delays: [0, 100, 200] } },
      { at: 0, op: 'reserve', maxDelay: 250, expect: { admitted: 0, last: { retryAfterMs: 50 } } },
      { at: 0, expect: { delays: [300] } },
      { at: 0, op: 'reserve', maxDelay: 500, expect: { delays: [400] } },
      { at: 0, op: 'reserve', maxDelay: 500, expect: { admitted: 0, last: { retryAfterMs: 100 } } },
    ],
  },
];

export const fixedWindowReservations: Scenario[] = [
  {
    name: 'reservation: fixed window, 2 per 1s',
    description: 'A full window reserves the start of the next one when it is within maxDelay; a consume then waits behind it; a cancel frees its place in that window.',
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
];

export const slidingWindowLogReservations: Scenario[] = [
  {
    name: 'reservation: sliding window log, 2 per 1s',
    description: 'A reservation is recorded at the earliest time it fits (when the oldest records leave), never before the newest; a consume counts it; a cancel removes its record.',
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
];

export const slidingWindowCounterReservations: Scenario[] = [
  {
    name: 'reservation: sliding window counter, 10 per 1s',
    description: 'A reservation gets the earliest time the estimate has room as the previous count fades; each one needs more room, so queues behind the last; a cancel frees its units in that window.',
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
    description: 'With the current window full, the reservation goes where the next window has room; the current window then waits behind it.',
    algorithms: [slidingWindowCounter({ limit: 2, window: '1s' })],
    steps: [
      { at: 500, times: 2, expect: { admitted: 2 } },
      { at: 500, op: 'reserve', maxDelay: 1000, expect: { delays: [1000] } },
      { at: 600, expect: { admitted: 0, last: { retryAfterMs: 1400 } } },
      { at: 2000, expect: { admitted: 1 } },
    ],
  },
];
