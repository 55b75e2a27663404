import type { Algorithm } from '@rl/core';
import { kindSuites } from '@rl/core/testing';

/** One hour and one day, in ms. */
const HORIZONS = { '1h': 3_600_000, '1d': 86_400_000 } as const;

/**
 * One algorithm of each rate kind, every sample of the kind suites of `@rl/core/testing` in their order
 * (the leaky bucket as a meter and as a shaper), that admits `limit` units and recovers only over
 * `horizon`, so that no window ends and no token comes back during a test.
 */
export function everyRateAlgorithm(limit: number, horizon: '1h' | '1d' = '1h'): Algorithm[] {
  return kindSuites.flatMap((suite) => suite.samples.map((sample) => sample(limit, HORIZONS[horizon])));
}
