import { bucketPolicy, type Policy } from '../decision.js';
import { formatDuration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { countOption, MAX_COUNT, MAX_SPAN_MS, spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import type { AlgorithmSpec } from './define.js';

/** The parsed options every bucket has, and the algorithm fields they define. */
export interface ParsedBucket {
  readonly capacity: number;
  /** Units added (token bucket) or leaked (leaky bucket) per `intervalMs`. */
  readonly rate: number;
  readonly intervalMs: number;
  readonly policy: Policy;
  /** Fields every bucket algorithm has, to spread into its spec (see `define.ts`): its limit and largest cost are its capacity. */
  readonly common: Pick<AlgorithmSpec, 'limit' | 'maxCost' | 'policy' | 'countDenied'>;
}

/**
 * Checks a bucket's options (`owner` names it in errors, for example `tokenBucket`; `rateName` is the
 * option that holds its rate): `capacity` an integer from 1 to `MAX_COUNT`, `interval` a duration
 * from 1 ms to `MAX_SPAN_MS` (default `'1s'`), the rate a finite number greater than 0 and at most
 * `MAX_COUNT` per interval, and at least what recovers the whole capacity within `MAX_SPAN_MS` (every
 * reset and retry time of the bucket is within that recovery, so each is finite and fits a header),
 * with a policy quota of at most `MAX_COUNT`. The caller has rejected unknown options.
 */
export function parseBucketOptions(options: Record<string, unknown>, owner: string, rateName: string): ParsedBucket {
  const capacity = countOption(options.capacity, `${owner}.capacity`);
  const rateField = `${owner}.${rateName}`;
  const rate = options[rateName];
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > MAX_COUNT) {
    throw new InvalidOptionError(rateField, rate, `a finite number greater than 0 and at most ${MAX_COUNT}`);
  }
  const intervalMs = options.interval === undefined ? 1000 : spanOption(options.interval, `${owner}.interval`);
  warnShortSpan(options.interval, `${owner}.interval`);
  const slowest = (capacity * intervalMs) / MAX_SPAN_MS;
  if (rate < slowest) {
    throw new InvalidOptionError(
      rateField,
      rate,
      `at least ${slowest} per ${formatDuration(intervalMs)} with capacity ${capacity}: the whole capacity must come back within ${MAX_SPAN_MS}ms (about 31,000 years)`,
    );
  }
  const policy = bucketPolicy(capacity, rate, intervalMs);
  if (policy.quota > MAX_COUNT) {
    throw new InvalidOptionError(
      rateField,
      rate,
      `a rate whose policy quota is at most ${MAX_COUNT} (with capacity ${capacity} it is ${policy.quota}: the rate times the whole intervals a full refill takes); lower the capacity or the rate`,
    );
  }
  return {
    capacity,
    rate,
    intervalMs,
    policy,
    common: { limit: capacity, maxCost: capacity, policy, countDenied: false },
  };
}
