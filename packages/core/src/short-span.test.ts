import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedWindow, leakyBucket, slidingWindowLog, tokenBucket } from './index.js';
import { SHORT_WINDOW_CODE } from './short-span.js';
import { warningsOf } from './testing/capture.js';

// Each test uses values no other test uses: the warning is once per process per field and value.
describe('RL_SHORT_WINDOW: a bare-number window or interval under one second', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("fixedWindow({ window: 60 }) warns once: 60 ms, did you mean '60s'?", () => {
    const messages = warningsOf(SHORT_WINDOW_CODE, () => {
      const algorithm = fixedWindow({ limit: 5, window: 60 });
      expect(algorithm.policy.name).toBe('5-in-60ms'); // the option stays valid: 60 ms, as written
      fixedWindow({ limit: 9, window: 60 });
    });
    expect(messages).toEqual([
      "fixedWindow.window: 60 is 60 ms: did you mean '60s'? A bare number is milliseconds; write '60ms' to keep 60 ms without this warning.",
    ]);
  });

  // Every window algorithm parses its window in window-options.ts, every bucket its interval in bucket-options.ts.
  it('the window algorithms and the buckets, each naming its own field', () => {
    const messages = warningsOf(SHORT_WINDOW_CODE, () => {
      slidingWindowLog({ limit: 5, window: 61 });
      tokenBucket({ capacity: 5, refillRate: 1, interval: 63 });
      leakyBucket({ capacity: 5, leakRate: 1, interval: 64 });
    });
    expect(messages.map((m) => m.split(':')[0])).toEqual([
      'slidingWindowLog.window',
      'tokenBucket.interval',
      'leakyBucket.interval',
    ]);
  });

  it('no warning for a string (the unit said), for 1000 ms or more, or for the default interval', () => {
    const messages = warningsOf(SHORT_WINDOW_CODE, () => {
      fixedWindow({ limit: 5, window: '65ms' });
      fixedWindow({ limit: 5, window: 1000 });
      fixedWindow({ limit: 5, window: 60_000 });
      tokenBucket({ capacity: 5, refillRate: 1 });
      tokenBucket({ capacity: 5, refillRate: 1, interval: '250ms' });
    });
    expect(messages).toEqual([]);
  });
});
