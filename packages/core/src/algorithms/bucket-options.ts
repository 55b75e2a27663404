import type { AlgorithmCommon } from '../algorithm.js';
import { bucketPolicy } from '../decision.js';
import { parseDuration } from '../duration.js';
import { integerAtLeast, positiveNumber } from '../options.js';

/** The parsed options every bucket has, and the algorithm fields they define. */
export interface ParsedBucket {
  readonly capacity: number;
  /** Units added (token bucket) or leaked (leaky bucket) per `intervalMs`. */
  readonly rate: number;
  readonly intervalMs: number;
  /** Fields every bucket algorithm has, to spread into it: its limit and largest cost are its capacity. */
  readonly common: Pick<AlgorithmCommon, 'limit' | 'maxCost' | 'policy' | 'countDenied'>;
}

/**
 * Checks a bucket's options (`owner` names it in errors, for example `tokenBucket`; `rateName` is the
 * option that holds its rate): `capacity` an integer of at least 1, the rate a finite number greater
 * than 0, `interval` a duration (default `'1s'`). The caller has rejected unknown options.
 */
export function parseBucketOptions(options: Record<string, unknown>, owner: string, rateName: string): ParsedBucket {
  const capacity = integerAtLeast(options.capacity, `${owner}.capacity`);
  const rate = positiveNumber(options[rateName], `${owner}.${rateName}`);
  const intervalMs = options.interval === undefined ? 1000 : parseDuration(options.interval, `${owner}.interval`);
  return {
    capacity,
    rate,
    intervalMs,
    common: { limit: capacity, maxCost: capacity, policy: bucketPolicy(capacity, rate, intervalMs), countDenied: false },
  };
}
