import { fixedWindow, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket, type Algorithm } from '@rl/core';

/**
 * One algorithm of each rate kind (the leaky bucket as a meter and as a shaper) that admits `limit`
 * units and recovers only over `horizon`, so that no window ends and no token comes back during a test.
 */
export function everyRateAlgorithm(limit: number, horizon: '1h' | '1d' = '1h'): Algorithm[] {
  return [
    fixedWindow({ limit, window: horizon }),
    slidingWindowLog({ limit, window: horizon }),
    slidingWindowCounter({ limit, window: horizon }),
    tokenBucket({ capacity: limit, refillRate: 1, interval: horizon }),
    leakyBucket({ capacity: limit, leakRate: 1, interval: horizon }),
    leakyBucket({ capacity: limit, leakRate: 1, interval: horizon, mode: 'shape' }),
  ];
}
