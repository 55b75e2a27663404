import type { Algorithm } from '../algorithm.js';
import { InvalidOptionError } from '../errors.js';

const STATE_KINDS: ReadonlySet<string> = new Set(['numeric', 'log', 'leases']);

/** Throws {@link InvalidOptionError} naming `field` unless `value` is an algorithm of @rl/core (`tokenBucket(...)`, ...). */
export function checkAlgorithm(value: unknown, field: string): asserts value is Algorithm {
  if (!value || typeof value !== 'object' || !STATE_KINDS.has((value as Algorithm).stateKind) || !(value as Algorithm).policy) {
    throw new InvalidOptionError(field, value, "an algorithm such as tokenBucket({ capacity: 20, refillRate: 10 }) or fixedWindow({ limit: 100, window: '1m' })");
  }
}
