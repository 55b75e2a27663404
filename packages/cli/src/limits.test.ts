import { describe, expect, it } from 'vitest';
import { ALGORITHM_NAMES, limitOf, parseLimit } from './limits.js';

describe('parseLimit: --limit "<algorithm>(<name>=<value>,…)"', () => {
  it.each([
    ['tokenBucket(capacity=400,refillRate=200)', 'token-bucket', { capacity: 400, refillRate: 200, interval: 1000 }],
    [
      'tokenBucket( capacity = 20 , refillRate = 2.5 , interval = 1m )',
      'token-bucket',
      { capacity: 20, refillRate: 2.5, interval: 60_000 },
    ],
    ['fixedWindow(limit=200,window=1s)', 'fixed-window', { limit: 200, window: 1000, countDenied: false }],
    [
      'fixedWindow(limit=5,window="15m",countDenied=true)',
      'fixed-window',
      { limit: 5, window: 900_000, countDenied: true },
    ],
    ['slidingWindowLog(limit=100,window=1s)', 'sliding-window-log', { limit: 100, window: 1000 }],
    ['slidingWindowCounter(limit=100,window=500)', 'sliding-window-counter', { limit: 100, window: 500 }],
    ['leakyBucket(capacity=20,leakRate=100)', 'leaky-bucket', { capacity: 20, leakRate: 100, mode: 'meter' }],
    [
      "leakyBucket(capacity=20,leakRate=100,mode='shape')",
      'leaky-bucket',
      { capacity: 20, leakRate: 100, mode: 'shape' },
    ],
    ['concurrency(limit=50)', 'concurrency', { limit: 50 }],
  ])('%s', (text, kind, options) => {
    const spec = parseLimit(text);
    expect(spec.algorithm.kind).toBe(kind);
    expect(spec.algorithm.options).toMatchObject(options);
    expect(spec.label).toBe(text);
  });

  it.each([
    ['tokenBucket', '--limit', 'an algorithm call such as'],
    ['tokenBucket(capacity=400', '--limit', 'an algorithm call such as'],
    ['tokenbucket(capacity=400,refillRate=200)', '--limit', 'tokenBucket (names are case-sensitive)'],
    ['gcra(limit=1)', '--limit', `one of ${ALGORITHM_NAMES.join(', ')}`],
    ['tokenBucket(capacity 400)', '--limit tokenBucket', 'name=value pairs'],
    ['tokenBucket(capacity=400,capacity=4)', '--limit tokenBucket.capacity', 'each option once'],
    // The factories' own errors, as they are.
    [
      'tokenBucket(capacity=0,refillRate=200)',
      'tokenBucket.capacity',
      'Invalid option tokenBucket.capacity: 0. Expected an integer from 1',
    ],
    ['tokenBucket(capacity=400)', 'tokenBucket.refillRate', 'Invalid option tokenBucket.refillRate'],
    [
      'fixedWindow(limit=200,window=1 fortnight)',
      'fixedWindow.window',
      'Invalid option fixedWindow.window: "1 fortnight". Expected a duration',
    ],
    [
      'fixedWindow(limit=200,window=1s,burst=3)',
      'fixedWindow.burst',
      'no such option; fixedWindow takes limit, window, countDenied',
    ],
    ['leakyBucket(capacity=20,leakRate=100,mode=queue)', 'leakyBucket.mode', "'meter' or 'shape'"],
  ])('%j is refused on %s: %s', (text, field, message) => {
    expect(() => parseLimit(text)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field }));
    expect(() => parseLimit(text)).toThrow(message);
  });

  it("limitOf: a config file's {factory: options}; the label is the call it stands for", () => {
    expect(limitOf('fixedWindow', { limit: 200, window: '1s' })).toMatchObject({
      label: 'fixedWindow(limit=200,window=1s)',
      factory: 'fixedWindow',
    });
    expect(() => limitOf('toString', {})).toThrow(expect.objectContaining({ field: '--limit' }));
  });
});
