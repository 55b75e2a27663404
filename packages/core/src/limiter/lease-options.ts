import type { Algorithm } from '../algorithm.js';
import { parseTimerDuration, type Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { checkOptions, integerAtLeast } from '../options.js';

/**
 * A quota lease (`lease` of `createLimiter` and of a middleware's limit): an instance takes `units`
 * of a key's shared quota from the store in one call and admits requests from them locally; it asks
 * for the next block while half of the last is left. Strict: the leased units are charged in the
 * store, so across all instances never more than the limit is admitted. See the README's "Quota
 * leases" for when to use them and the bounds of each algorithm.
 */
export interface LeaseOptions {
  /** Units per block (an integer of at least 1, at most the algorithm's capacity or limit). Requests costing more are charged in the store alone. */
  units: number;
  /**
   * The longest a block is held (default `'1s'`, at most 24 days): units still unused then are given
   * back to the store, and the next request takes a new block. The algorithm may end a block sooner
   * (a fixed window at its window's end; see `Algorithm.leaseHoldMs`).
   */
  ttl?: Duration;
  /** The most keys holding a block at once (default 10,000); a key beyond it is charged in the store per request. */
  maxKeys?: number;
}

/** {@link LeaseOptions} checked, in ms. */
export interface LeaseConfig {
  readonly units: number;
  readonly ttlMs: number;
  readonly maxKeys: number;
}

const DEFAULT_TTL_MS = 1000;
const DEFAULT_MAX_KEYS = 10_000;

/**
 * The `lease` option, checked against the limiter's own algorithm (undefined when every call gives
 * its own: each call's is checked by {@link leasable}); undefined when not given. Throws
 * `InvalidOptionError` naming `field` for bad numbers, a concurrency limit, a shaper, an algorithm that
 * counts denied requests (every one must reach the store) or a lockout (every instance must see the denial that starts it).
 */
export function parseLeaseOptions(
  value: unknown,
  algorithm: Algorithm | undefined,
  blocks: boolean,
  field: string,
): LeaseConfig | undefined {
  if (value === undefined) return undefined;
  const o = checkOptions(value, ['units', 'ttl', 'maxKeys'], field);
  const units = integerAtLeast(o.units, `${field}.units`);
  const ttlMs = o.ttl === undefined ? DEFAULT_TTL_MS : parseTimerDuration(o.ttl, `${field}.ttl`);
  if (ttlMs < 1) throw new InvalidOptionError(`${field}.ttl`, o.ttl, 'a duration of at least 1ms');
  const maxKeys = o.maxKeys === undefined ? DEFAULT_MAX_KEYS : integerAtLeast(o.maxKeys, `${field}.maxKeys`);
  if (blocks)
    throw new InvalidOptionError(
      field,
      value,
      'no lease with blockDuration, bans or overrides: a lockout starts at a denial that every instance must see, a ban or an override at every decision (leases admit locally)',
    );
  if (algorithm !== undefined) {
    if (algorithm.leaseHoldMs(0, units) <= 0)
      throw new InvalidOptionError(
        field,
        value,
        `no lease on a ${algorithm.kind} limit of this kind (${algorithm.policy.name}): it admits per request (a concurrency limit, a shaping leaky bucket)`,
      );
    if (algorithm.countDenied)
      throw new InvalidOptionError(
        field,
        value,
        'no lease with countDenied: every denied request must reach the store to be counted',
      );
    if (units > algorithm.maxCost)
      throw new InvalidOptionError(
        `${field}.units`,
        o.units,
        `at most the ${algorithm.kind} capacity ${algorithm.maxCost} (a larger block could never be taken)`,
      );
  }
  return { units, ttlMs, maxKeys };
}

/** Whether a call with `algorithm` takes its units from a lease of `units`: a rate algorithm that leases, counts no denial and has no lockout, with room for a block. */
export function leasable(algorithm: Algorithm, units: number): boolean {
  return (
    !algorithm.countDenied &&
    algorithm.blockMs === 0 &&
    units <= algorithm.maxCost &&
    algorithm.leaseHoldMs(0, units) > 0
  );
}
