import { formatDuration } from './duration.js';

/**
 * Enough to write the IETF `RateLimit-Policy` header for one limit:
 * `"<name>";q=<quota>;w=<windowSeconds>`.
 */
export interface Policy {
  /** Stable name of the policy, for example `100-in-1m`. */
  readonly name: string;
  /** Units admitted per window (the limit or the bucket capacity). */
  readonly quota: number;
  /** The window in whole seconds (at least 1): the window length, or the time a bucket takes to recover fully. */
  readonly windowSeconds: number;
}

/** Why a decision was not taken by the store itself. Absent when the store answered. */
export type DecisionReason = 'store-error' | 'timeout' | 'fallback' | 'deny-cache' | 'blocked';

/**
 * The answer to one request. All times are milliseconds relative to now, rounded up to whole milliseconds.
 */
export interface Decision {
  /** True when the request may proceed (possibly after `delayMs`). */
  readonly allowed: boolean;
  /** The quota of the limit: the window limit, or the bucket capacity. */
  readonly limit: number;
  /** Whole units still available right after this decision; never below 0. */
  readonly remaining: number;
  /** Milliseconds until the full quota is available again (0 when it is available now). */
  readonly resetMs: number;
  /**
   * 0 when allowed; otherwise milliseconds until a request of the same cost could be admitted (if
   * nothing else consumes); for a reservation, until one with the same `maxDelay` could.
   */
  readonly retryAfterMs: number;
  /**
   * Milliseconds the admitted request should wait before proceeding: until its slot (a reservation, a
   * shaping leaky bucket); 0 otherwise. Rounded up: the slot is at most `at + delayMs`.
   */
  readonly delayMs: number;
  /** The limit's policy, for the RateLimit-Policy header. */
  readonly policy: Policy;
  /**
   * When the decision was taken, in ms on the clock its step ran with: the `now` the store decided at
   * (the limiter's `clock` when it has one, else the store's own: Redis `TIME`, the memory store's
   * clock). A give-back of this request passes it on (`limiter.undo(key, cost, decision)`), so that
   * the store gives back to the window the request was charged in. A decision taken without the store
   * (a `reason` is set) carries the limiter's local clock at that time (its `clock`, else `Date.now()`):
   * such a decision charged nothing in the store, and nothing is given back for it.
   */
  readonly at: number;
  /** Set when the decision did not come from the store: see {@link DecisionReason}. */
  readonly reason?: DecisionReason;
}

/** Builds a policy named `<quota>-in-<window>`; the window is rounded up to whole seconds for the header. */
export function makePolicy(quota: number, windowMs: number, name?: string): Policy {
  return Object.freeze({
    name: name ?? `${quota}-in-${formatDuration(Math.ceil(windowMs))}`,
    quota,
    windowSeconds: Math.max(1, Math.ceil(windowMs / 1000 - 1e-9)),
  });
}

/** Tolerance for floating point comparisons of fractional units and times. */
export const EPSILON = 1e-9;

/**
 * One unit in the last place of a double, relative (2^-52): what a comparison of absolute times forgives
 * per rounding that went into them (a leaky bucket's `tat`, one rounding per slot added, against `now`:
 * 3.8e-4 ms a slot at a real clock's 1.7e12 ms). Stores' scripts use the same (`2^-52`).
 */
export const CLOCK_ROUNDING = 2 ** -52;

/** Rounds a duration in ms up to a whole non-negative number of milliseconds, forgiving float noise. */
export function ceilMs(ms: number): number {
  return ms <= EPSILON ? 0 : Math.ceil(ms - EPSILON);
}

/** Whole units, rounded down, forgiving float noise, never below 0. */
export function floorUnits(units: number): number {
  return units <= 0 ? 0 : Math.floor(units + EPSILON);
}

/**
 * Whether a decision's quota fields (`limit`, `remaining`, `resetMs`) come from the store: false for
 * a decision of the failure policy after a store error or timeout (it charged nothing and knows no
 * real quota). Such a decision never binds the combined numbers of several limits while another
 * limit's store answered.
 */
export function reportsQuota(decision: Decision): boolean {
  return decision.reason !== 'store-error' && decision.reason !== 'timeout';
}

/**
 * Every field of a {@link Decision} but `reason`, in the order a decision holds them: what
 * {@link makeDecision} is given (a record, so that a call names each number it passes).
 */
export type DecisionFields = Omit<Decision, 'reason'>;

/**
 * A step's exact results (see {@link decisionFromExact}), before rounding. Its own names (`resetInMs`,
 * not `resetMs`), so that it never has a decision's shape: V8 keeps the shape's field representations,
 * and the fractional numbers of this record would turn the decision's whole-number fields into boxed
 * doubles, one allocation more per field and decision.
 */
export interface ExactDecision {
  readonly allowed: boolean;
  /** Units left after this decision: fractional, may be below 0. */
  readonly remaining: number;
  /** Ms until the full quota is available again. */
  readonly resetInMs: number;
  /** Ms until a request of the same cost could pass; read only when denied. */
  readonly retryInMs: number;
  /** Ms the admitted request should wait (0 unless it holds a slot). */
  readonly delayInMs: number;
  /** The algorithm's quota: the decision's `limit`. */
  readonly limit: number;
  /** The algorithm's policy (at `at`, for a calendar window). */
  readonly policy: Policy;
  /** The `now` (ms) the step decided at: the decision's {@link Decision.at}. */
  readonly at: number;
}

/**
 * The decision of a step's exact results, rounded as the {@link Decision} contract says: `remaining`
 * down to whole units (never below 0), times up to whole milliseconds (never below 0), both forgiving
 * float noise of {@link EPSILON}; `retryAfterMs` 0 when allowed and at least 1 when denied (a denial
 * always tells the client to wait). `limit`, `policy` and `at` are passed as they are: the step copies
 * the algorithm's quota and policy from its own closure (a read of them from the algorithm here would
 * see every algorithm's object shape).
 *
 * The one place that holds the rounding: every step returns through it, and the Redis store calls it on
 * the exact values its Lua twins return, so both stores round alike. A step builds `exact` as a literal
 * in the call: the compiler inlines this function into the step and allocates no record. The decision
 * is one literal with the fields in {@link makeDecision}'s order (one object shape for the library).
 */
export function decisionFromExact(exact: ExactDecision): Decision {
  const allowed = exact.allowed;
  return {
    allowed,
    limit: exact.limit,
    remaining: floorUnits(exact.remaining),
    resetMs: ceilMs(exact.resetInMs),
    retryAfterMs: allowed ? 0 : Math.max(1, ceilMs(exact.retryInMs)),
    delayMs: ceilMs(exact.delayInMs),
    policy: exact.policy,
    at: exact.at,
  };
}

/**
 * Creates a decision with every field in a fixed order (one object shape for the whole library: a
 * literal in {@link decisionFromExact} holds the same fields in the same order), whatever the order
 * `fields` holds them in (a decision taken without the store gets its `reason` from the caller).
 */
export function makeDecision(fields: DecisionFields): Decision {
  return {
    allowed: fields.allowed,
    limit: fields.limit,
    remaining: fields.remaining,
    resetMs: fields.resetMs,
    retryAfterMs: fields.retryAfterMs,
    delayMs: fields.delayMs,
    policy: fields.policy,
    at: fields.at,
  };
}

/**
 * The policy of a bucket: its sustained rate over the shortest whole number of intervals in which a
 * full bucket refills, so that the quota is never below the capacity (a client never sees `remaining`
 * above the quota) and quota / window is the sustained rate. `capacity: 100, refillRate: 100` is
 * `100-in-1s`; `capacity: 20, refillRate: 10` is `20-in-2s`; `capacity: 10, refillRate: 3` is
 * `12-in-4s`. When the rate is not a whole number per whole seconds: the capacity over the time a full
 * refill takes (`capacity: 20, refillRate: 0.5` is `20-in-40s`).
 */
export function bucketPolicy(capacity: number, ratePerInterval: number, intervalMs: number): Policy {
  if (Number.isInteger(ratePerInterval) && intervalMs % 1000 === 0) {
    const intervals = Math.max(1, Math.ceil(capacity / ratePerInterval - EPSILON));
    return makePolicy(ratePerInterval * intervals, intervalMs * intervals);
  }
  return makePolicy(capacity, (capacity * intervalMs) / ratePerInterval);
}
