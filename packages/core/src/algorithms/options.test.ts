import { describe, expect, it } from 'vitest';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';
import { rejection } from '../testing/capture.js';

describe('algorithm options are checked at construction', () => {
  it.each([
    ['tokenBucket.refillRate', () => tokenBucket({ capacity: 10, refillRate: 0 }), 0],
    ['tokenBucket.refillRate', () => tokenBucket({ capacity: 10, refillRate: -5 }), -5],
    ['tokenBucket.refillRate', () => tokenBucket({ capacity: 10, refillRate: Number.NaN }), Number.NaN],
    ['tokenBucket.capacity', () => tokenBucket({ capacity: 0, refillRate: 1 }), 0],
    ['tokenBucket.capacity', () => tokenBucket({ capacity: 0.5, refillRate: 1 }), 0.5],
    ['tokenBucket.interval', () => tokenBucket({ capacity: 1, refillRate: 1, interval: '1y' as never }), '1y'],
    ['tokenBucket.interval', () => tokenBucket({ capacity: 1, refillRate: 1, interval: 0 }), 0],
    ['fixedWindow.window', () => fixedWindow({ limit: 10, window: 0 }), 0],
    ['fixedWindow.window', () => fixedWindow({ limit: 10, window: '10 parsecs' as never }), '10 parsecs'],
    ['fixedWindow.limit', () => fixedWindow({ limit: 0, window: '1s' }), 0],
    ['fixedWindow.limit', () => fixedWindow({ limit: Number.NaN, window: '1s' }), Number.NaN],
    ['fixedWindow.countDenied', () => fixedWindow({ limit: 1, window: '1s', countDenied: 'yes' as never }), 'yes'],
    ['slidingWindowLog.limit', () => slidingWindowLog({ limit: -1, window: '1s' }), -1],
    ['slidingWindowLog.window', () => slidingWindowLog({ limit: 1, window: -1000 }), -1000],
    ['slidingWindowCounter.window', () => slidingWindowCounter({ limit: 1, window: '0ms' }), '0ms'],
    ['leakyBucket.leakRate', () => leakyBucket({ capacity: 1, leakRate: Infinity }), Infinity],
    ['leakyBucket.capacity', () => leakyBucket({ capacity: 0, leakRate: 1 }), 0],
    ['leakyBucket.mode', () => leakyBucket({ capacity: 1, leakRate: 1, mode: 'queue' as never }), 'queue'],
    ['concurrency.limit', () => concurrency({ limit: 0 }), 0],
    ['concurrency.lease', () => concurrency({ limit: 1, lease: 0 }), 0],
  ])('%s: %s', (field, make, value) => {
    const error = rejection(make);
    expect(error.code).toBe('RL_INVALID_OPTION');
    expect(error.field).toBe(field);
    expect(error.value).toEqual(value);
    expect(error.message).toContain(field);
    expect(error.message).toContain(String(value));
  });

  it('unknown options are errors, not ignored', () => {
    const error = rejection(() => tokenBucket({ capacity: 10, refillRate: 1, burst: 5 } as never));
    expect(error.field).toBe('tokenBucket.burst');
    expect(error.message).toMatch(/no such option.*capacity, refillRate, interval/);
    expect(rejection(() => fixedWindow({ limit: 1, window: '1s', windowMs: 5 } as never)).field).toBe(
      'fixedWindow.windowMs',
    );
    expect(rejection(() => tokenBucket(undefined as never)).field).toBe('tokenBucket');
  });

  it.each([
    {
      algorithm: fixedWindow({ limit: 100, window: '1m' }),
      policy: { name: '100-in-1m', quota: 100, windowSeconds: 60 },
    },
    {
      algorithm: tokenBucket({ capacity: 20, refillRate: 100 }),
      policy: { name: '100-in-1s', quota: 100, windowSeconds: 1 },
    },
    {
      algorithm: tokenBucket({ capacity: 20, refillRate: 0.5 }),
      policy: { name: '20-in-40s', quota: 20, windowSeconds: 40 },
    },
    // A burst above one interval's refill: the quota spans the intervals a full refill takes, never below the capacity.
    {
      algorithm: tokenBucket({ capacity: 20, refillRate: 10 }),
      policy: { name: '20-in-2s', quota: 20, windowSeconds: 2 },
    },
    {
      algorithm: tokenBucket({ capacity: 10, refillRate: 3 }),
      policy: { name: '12-in-4s', quota: 12, windowSeconds: 4 },
    },
    {
      algorithm: tokenBucket({ capacity: 400, refillRate: 200 }),
      policy: { name: '400-in-2s', quota: 400, windowSeconds: 2 },
    },
    {
      algorithm: leakyBucket({ capacity: 30, leakRate: 10, interval: '1m' }),
      policy: { name: '30-in-3m', quota: 30, windowSeconds: 180 },
    },
  ])('exposes its policy: $policy.name', ({ algorithm, policy }) => {
    expect(algorithm.policy).toEqual(policy);
  });

  it('exposes normalised parameters', () => {
    // The normalised numbers (times in ms, rates per ms) are the constants of the Lua twin.
    expect(leakyBucket({ capacity: 20, leakRate: 100, mode: 'shape' }).script.constants).toEqual([
      { name: 'CAPACITY', value: 20 },
      { name: 'EMISSION', value: 10 },
      { name: 'SHAPE', value: 1 },
    ]);
    expect(tokenBucket({ capacity: 20, refillRate: 100 }).script.constants).toEqual([
      { name: 'CAPACITY', value: 20 },
      { name: 'RATE', value: 0.1 },
    ]);
  });
});

describe('extreme values are rejected at creation: every number the headers say must be representable', () => {
  const MAX = 999_999_999_999_999;
  it.each([
    // [field, the bound the message names, make]
    ['fixedWindow.limit', '999999999999999', () => fixedWindow({ limit: 1e15, window: '1s' })],
    ['fixedWindow.limit', '999999999999999', () => fixedWindow({ limit: 1e20, window: '1s' })],
    [
      'slidingWindowLog.limit',
      '999999999999999',
      () => slidingWindowLog({ limit: Number.MAX_SAFE_INTEGER, window: '1s' }),
    ],
    [
      'slidingWindowCounter.limit',
      '999999999999999',
      () => slidingWindowCounter({ limit: Number.MAX_VALUE, window: '1s' }),
    ],
    ['fixedWindow.window', '999999999999999ms', () => fixedWindow({ limit: 10, window: 1e308 })],
    ['slidingWindowLog.window', '999999999999999ms', () => slidingWindowLog({ limit: 10, window: '20000000d' })],
    ['slidingWindowCounter.window', '999999999999999ms', () => slidingWindowCounter({ limit: 10, window: 1e15 })],
    ['fixedWindow.window', 'from 1ms', () => fixedWindow({ limit: 10, window: 1e-300 })],
    ['tokenBucket.capacity', '999999999999999', () => tokenBucket({ capacity: 1e16, refillRate: 1 })],
    ['tokenBucket.refillRate', '999999999999999', () => tokenBucket({ capacity: 10, refillRate: 1e20 })],
    ['tokenBucket.refillRate', 'at least 1.00000000000000', () => tokenBucket({ capacity: 10, refillRate: 1e-300 })],
    ['tokenBucket.refillRate', 'at least 1.00000000000000', () => tokenBucket({ capacity: 10, refillRate: 5e-324 })],
    // The policy's quota is the rate times the whole intervals a full refill takes: 1e14 × 10.
    [
      'tokenBucket.refillRate',
      'quota is at most 999999999999999',
      () => tokenBucket({ capacity: MAX, refillRate: 1e14 }),
    ],
    // An empty bucket of 1e15 − 1 tokens refilling at 2 per second takes about 16 million years.
    ['tokenBucket.refillRate', 'at least 1000 per 1s', () => tokenBucket({ capacity: MAX, refillRate: 2 })],
    ['tokenBucket.interval', '999999999999999ms', () => tokenBucket({ capacity: 10, refillRate: 1, interval: 1e18 })],
    ['tokenBucket.interval', 'from 1ms', () => tokenBucket({ capacity: 10, refillRate: 1, interval: 0.001 })],
    ['leakyBucket.capacity', '999999999999999', () => leakyBucket({ capacity: 1e15, leakRate: 1 })],
    [
      'leakyBucket.leakRate',
      'at least 0.001000000000000001 per 1s',
      () => leakyBucket({ capacity: 1e9, leakRate: 1e-9 }),
    ],
    ['leakyBucket.leakRate', '999999999999999', () => leakyBucket({ capacity: 5, leakRate: 1e300, mode: 'shape' })],
    [
      'leakyBucket.interval',
      '999999999999999ms',
      () => leakyBucket({ capacity: 5, leakRate: 1, interval: '40000000d' }),
    ],
    ['concurrency.limit', '999999999999999', () => concurrency({ limit: 1e15 })],
    ['concurrency.lease', '999999999999999ms', () => concurrency({ limit: 1, lease: 1e300 })],
  ])('%s: the message names %s', (field, bound, make) => {
    const error = rejection(make);
    expect(error.code).toBe('RL_INVALID_OPTION');
    expect(error.field).toBe(field);
    expect(error.message).toContain(bound);
  });

  it('accepts the bounds themselves, and each then has finite times and representable numbers', () => {
    const algorithms = [
      fixedWindow({ limit: MAX, window: MAX }),
      slidingWindowCounter({ limit: MAX, window: 1 }),
      tokenBucket({ capacity: MAX, refillRate: MAX }),
      tokenBucket({ capacity: 10, refillRate: (10 * 1000) / MAX }),
      leakyBucket({ capacity: 1, leakRate: 1000 / MAX, mode: 'shape' }),
      leakyBucket({ capacity: MAX, leakRate: MAX, interval: 1 }),
      concurrency({ limit: MAX, lease: MAX }),
    ];
    for (const algorithm of algorithms) {
      expect(algorithm.policy.quota).toBeLessThanOrEqual(MAX);
      expect(Number.isFinite(algorithm.policy.windowSeconds)).toBe(true);
      if (algorithm.stateKind === 'numeric') {
        const state = new Float64Array(algorithm.stateSize);
        const now = 1_800_000_000_000;
        const first = algorithm.step(state, 0, true, { now, cost: algorithm.limit, commit: true });
        const denied = algorithm.step(state, 0, false, { now, cost: algorithm.limit, commit: false });
        for (const d of [first, denied]) {
          for (const value of [d.remaining, d.resetMs, d.retryAfterMs, d.delayMs]) {
            expect(Number.isFinite(value)).toBe(true);
            expect(value).toBeLessThanOrEqual(MAX * 2);
          }
        }
        expect(Number.isFinite(algorithm.expiresAt(state, 0))).toBe(true);
      }
    }
  });
});

describe('null is a bad value for every algorithm option, never "not given"', () => {
  type Row = [field: string, make: () => unknown];
  const window = { limit: 5, window: '1s' };
  const rows: Row[] = [
    ['tokenBucket', () => tokenBucket(null as never)],
    ['fixedWindow', () => fixedWindow(null as never)],
    ['concurrency', () => concurrency(null as never)],
  ];
  for (const name of ['limit', 'window', 'countDenied']) {
    rows.push([`fixedWindow.${name}`, () => fixedWindow({ ...window, [name]: null } as never)]);
    rows.push([`slidingWindowLog.${name}`, () => slidingWindowLog({ ...window, [name]: null } as never)]);
    rows.push([`slidingWindowCounter.${name}`, () => slidingWindowCounter({ ...window, [name]: null } as never)]);
  }
  for (const name of ['capacity', 'refillRate', 'interval'])
    rows.push([`tokenBucket.${name}`, () => tokenBucket({ capacity: 5, refillRate: 1, [name]: null } as never)]);
  for (const name of ['capacity', 'leakRate', 'interval', 'mode'])
    rows.push([`leakyBucket.${name}`, () => leakyBucket({ capacity: 5, leakRate: 1, [name]: null } as never)]);
  for (const name of ['limit', 'lease'])
    rows.push([`concurrency.${name}`, () => concurrency({ limit: 5, [name]: null } as never)]);

  it.each(rows)('%s', (field, make) => {
    const error = rejection(make);
    expect(error.field).toBe(field);
    expect(error.value).toBeNull();
  });
});

describe('numeric steps are state transitions', () => {
  it('a peek (commit false) writes nothing', () => {
    const algorithm = tokenBucket({ capacity: 5, refillRate: 1 });
    const state = new Float64Array([2, 1000]);
    const decision = algorithm.step(state, 0, false, { now: 3000, cost: 3, commit: false });
    expect(decision).toMatchObject({ allowed: true, remaining: 1 });
    expect([...state]).toEqual([2, 1000]);
    algorithm.step(state, 0, false, { now: 3000, cost: 3, commit: true });
    expect([...state]).toEqual([1, 3000]);
  });

  it('state at an offset leaves its neighbours alone', () => {
    const algorithm = fixedWindow({ limit: 3, window: '1s' });
    const slab = new Float64Array([7, 7, 0, 0, 7, 7]);
    algorithm.step(slab, 2, true, { now: 1500, cost: 1, commit: true });
    expect([...slab]).toEqual([7, 7, 1000, 1, 7, 7]);
    expect(algorithm.expiresAt(slab, 2)).toBe(2000);
  });

  it('a token bucket expires exactly when it would be full again', () => {
    const algorithm = tokenBucket({ capacity: 10, refillRate: 2 });
    const state = new Float64Array(2);
    algorithm.step(state, 0, true, { now: 0, cost: 10, commit: true });
    expect(algorithm.expiresAt(state, 0)).toBe(5000);
    const later = algorithm.step(state, 0, false, { now: 4999, cost: 0, commit: false });
    expect(later.remaining).toBe(9);
  });
});
