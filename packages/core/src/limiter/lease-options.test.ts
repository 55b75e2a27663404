/** The `lease` option: what it refuses at creation, naming the field (a bad lease never reaches a store). */
import { describe, expect, it } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';
import type { LimiterOptions } from './options.js';

const perSecond = fixedWindow({ limit: 100, window: '1s' });

describe('lease options', () => {
  it('refuses options it cannot honour, naming the field', () => {
    const store = new TestStore();
    const bad = (options: Partial<LimiterOptions>) => () => createLimiter({ algorithm: perSecond, store, ...options });
    expect(bad({ lease: { units: 0 } })).toThrow(
      expect.objectContaining({
        code: 'RL_INVALID_OPTION',
        message: expect.stringContaining('createLimiter.lease.units'),
      }),
    );
    expect(bad({ lease: { units: 101 } })).toThrow(/createLimiter\.lease\.units.*capacity 100/);
    expect(bad({ lease: { units: 5, ttl: 'soon' as never } })).toThrow(/createLimiter\.lease\.ttl/);
    expect(bad({ lease: { units: 5, extra: 1 } as never })).toThrow(/extra/);
    expect(bad({ lease: { units: 5 }, blockDuration: '1m' })).toThrow(/blockDuration/);
    expect(bad({ lease: { units: 5 }, algorithm: concurrency({ limit: 5 }) })).toThrow(/no lease/);
    expect(bad({ lease: { units: 5 }, algorithm: leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }) })).toThrow(
      /no lease/,
    );
    expect(
      bad({ lease: { units: 5 }, algorithm: fixedWindow({ limit: 10, window: '1s', countDenied: true }) }),
    ).toThrow(/countDenied/);
  });
});
