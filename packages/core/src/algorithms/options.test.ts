import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../errors.js';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';

/** Runs `make` and returns the InvalidOptionError it throws. */
function optionError(make: () => unknown): InvalidOptionError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    return error as InvalidOptionError;
  }
  throw new Error('expected an InvalidOptionError');
}

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
    const error = optionError(make);
    expect(error.code).toBe('RL_INVALID_OPTION');
    expect(error.field).toBe(field);
    expect(error.value).toEqual(value);
    expect(error.message).toContain(field);
    expect(error.message).toContain(String(value));
  });

  it('unknown options are errors, not ignored', () => {
    const error = optionError(() => tokenBucket({ capacity: 10, refillRate: 1, burst: 5 } as never));
    expect(error.field).toBe('tokenBucket.burst');
    expect(error.message).toMatch(/no such option.*capacity, refillRate, interval/);
    expect(optionError(() => fixedWindow({ limit: 1, window: '1s', windowMs: 5 } as never)).field).toBe('fixedWindow.windowMs');
    expect(optionError(() => tokenBucket(undefined as never)).field).toBe('tokenBucket');
  });

  it('exposes normalised parameters and the policy', () => {
    expect(fixedWindow({ limit: 100, window: '1m' }).policy).toEqual({ name: '100-in-1m', quota: 100, windowSeconds: 60 });
    expect(tokenBucket({ capacity: 20, refillRate: 100 }).policy).toEqual({ name: '100-in-1s', quota: 100, windowSeconds: 1 });
    expect(tokenBucket({ capacity: 20, refillRate: 0.5 }).policy).toEqual({ name: '20-in-40s', quota: 20, windowSeconds: 40 });
    // A burst above one interval's refill: the quota spans the intervals a full refill takes, never below the capacity.
    expect(tokenBucket({ capacity: 20, refillRate: 10 }).policy).toEqual({ name: '20-in-2s', quota: 20, windowSeconds: 2 });
    expect(tokenBucket({ capacity: 10, refillRate: 3 }).policy).toEqual({ name: '12-in-4s', quota: 12, windowSeconds: 4 });
    expect(tokenBucket({ capacity: 400, refillRate: 200 }).policy).toEqual({ name: '400-in-2s', quota: 400, windowSeconds: 2 });
    expect(leakyBucket({ capacity: 30, leakRate: 10, interval: '1m' }).policy).toEqual({ name: '30-in-3m', quota: 30, windowSeconds: 180 });
    expect(leakyBucket({ capacity: 20, leakRate: 100, mode: 'shape' }).params).toEqual({ capacity: 20, emissionMs: 10, shape: 1 });
    expect(tokenBucket({ capacity: 20, refillRate: 100 }).params).toEqual({ capacity: 20, ratePerMs: 0.1 });
  });
});

describe('numeric steps are state transitions', () => {
  it('a peek (commit false) writes nothing', () => {
    const algorithm = tokenBucket({ capacity: 5, refillRate: 1 });
    const state = new Float64Array([2, 1000]);
    const decision = algorithm.step(state, 0, false, 3000, 3, false);
    expect(decision).toMatchObject({ allowed: true, remaining: 1 });
    expect([...state]).toEqual([2, 1000]);
    algorithm.step(state, 0, false, 3000, 3, true);
    expect([...state]).toEqual([1, 3000]);
  });

  it('state at an offset leaves its neighbours alone', () => {
    const algorithm = fixedWindow({ limit: 3, window: '1s' });
    const slab = new Float64Array([7, 7, 0, 0, 7, 7]);
    algorithm.step(slab, 2, true, 1500, 1, true);
    expect([...slab]).toEqual([7, 7, 1000, 1, 7, 7]);
    expect(algorithm.expiresAt(slab, 2)).toBe(2000);
  });

  it('a token bucket expires exactly when it would be full again', () => {
    const algorithm = tokenBucket({ capacity: 10, refillRate: 2 });
    const state = new Float64Array(2);
    algorithm.step(state, 0, true, 0, 10, true);
    expect(algorithm.expiresAt(state, 0)).toBe(5000);
    const later = algorithm.step(state, 0, false, 4999, 0, false);
    expect(later.remaining).toBe(9);
  });
});
