import { checkCost, isAlgorithm, type Algorithm } from '../algorithm.js';
import { checkOptions } from '../options.js';
import { idempotentCharge, type IdempotencyConfig } from './idempotency.js';
import type { Decision } from '../decision.js';
import type { IdempotentCharge, MaybePromise, StoreCapabilities } from '../store/interface.js';
import { requireCapability } from './capabilities.js';
import {
  CostExceedsCapacityError,
  errorDocsUrl,
  InvalidAlgorithmError,
  InvalidKeyError,
  InvalidOptionError,
  UnsupportedError,
} from '../errors.js';

// The input rules of a limiter's verbs, each checked once before anything is charged: a key, a cost,
// an algorithm.

/** What the rules ask of the limiter a call is for (its core). */
export interface CallRules {
  readonly algorithm: Algorithm | undefined;
  readonly isConcurrencyLimit: boolean;
  readonly maxCost: number;
  /** `value` as an algorithm of a call, or the typed error. */
  checkCallAlgorithm(value: unknown): Algorithm;
}

/** A key: a non-empty string, or {@link InvalidKeyError}. */
export function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidKeyError(key);
}

/**
 * The cost rule of a limiter, in one place: a number greater than 0 and at most `maxCost` (a finite
 * number, so NaN and Infinity fail). Cheap enough for the fast path, which calls it inline.
 */
export function isChargeableCost(cost: unknown, maxCost: number): cost is number {
  return typeof cost === 'number' && cost > 0 && cost <= maxCost;
}

/**
 * `cost` when `limiter` charges it under `algorithm` ({@link isChargeableCost} for the smaller of the
 * limiter's and the algorithm's `maxCost`; 0 too with `allowZero`, for a peek). Otherwise throws
 * `InvalidCostError` (not a finite number > 0) or `CostExceedsCapacityError` (above the limiter's
 * `maxCost`, which is the algorithm's capacity unless `maxCost` was set lower, or above the capacity of
 * the call's own algorithm). Runs before any state is touched.
 */
export function checkLimiterCost(
  limiter: { readonly maxCost: number; readonly maxCostField?: string },
  cost: unknown,
  algorithm: Algorithm,
  allowZero = false,
): number {
  const maxCost = Math.min(limiter.maxCost, algorithm.maxCost);
  if (isChargeableCost(cost, maxCost) || (allowZero && cost === 0)) return cost as number;
  checkCost(algorithm, cost, allowZero);
  throw exceedsMaxCost(cost as number, limiter.maxCost, algorithm, limiter.maxCostField);
}

/** `field`: where that `maxCost` was set, in the function the user called (`rateLimit.maxCost`); a limiter's own by default. */
function exceedsMaxCost(
  cost: number,
  maxCost: number,
  algorithm: Algorithm,
  field = 'createLimiter.maxCost',
): CostExceedsCapacityError {
  const error = new CostExceedsCapacityError(cost, maxCost, algorithm.kind);
  if (maxCost < algorithm.maxCost) {
    error.message = `Cost ${cost} is larger than this limiter's maxCost ${maxCost}. Raise ${field} (at most the ${algorithm.kind} capacity ${algorithm.maxCost}) or lower the cost. See ${errorDocsUrl(error.code)}`;
  }
  return error;
}

/** The limiter's own algorithm, or the typed error when every call must give one. */
export function ownAlgorithm(core: CallRules): Algorithm {
  if (core.algorithm === undefined) {
    throw new InvalidAlgorithmError(
      undefined,
      'this limiter has no algorithm of its own (createLimiter without algorithm): pass one with each call',
    );
  }
  return core.algorithm;
}

/**
 * The algorithm of a rate call (the limiter's own, or `algorithm` checked by the core), once `key` and
 * `cost` are checked against it; or the typed error (nothing is touched).
 */
export function rateCall(core: CallRules, key: unknown, cost: unknown, algorithm: Algorithm | undefined): Algorithm {
  let a: Algorithm;
  if (algorithm === undefined) {
    a = ownAlgorithm(core);
    if (core.isConcurrencyLimit)
      throw new UnsupportedError(
        'A concurrency limit is taken with limiter.acquire(key), which returns a decision with release().',
      );
  } else {
    a = core.checkCallAlgorithm(algorithm);
  }
  checkKey(key);
  checkLimiterCost(core, cost, a);
  return a;
}

/** Whether the third argument of `undo` is a decision (it has `allowed`) rather than an algorithm. */
export function isDecisionLike(value: unknown): value is Decision {
  return value !== null && typeof value === 'object' && typeof (value as Decision).allowed === 'boolean';
}

/** A decision, and the algorithm its call chose (`consume(key, cost, { algorithm })`): what `settle` takes for such a charge. */
export interface ChargedWith {
  readonly decision: Decision;
  readonly algorithm: Algorithm;
}

/** The arguments of a verb on an earlier charge (`undo`, `settle`) after its key and cost: `(decision)` or `(algorithm, decision)`. */
export interface EarlierChargeArguments {
  readonly key: unknown;
  readonly cost: unknown;
  readonly algorithmOrDecision: Algorithm | Decision | undefined;
  readonly decision: Decision | undefined;
}

/**
 * The arguments of a verb on an earlier charge, a decision telling itself from an algorithm by its
 * `allowed`. Returns the checked algorithm (the limiter's own, or the one given), and the decision when
 * one was given (an object with a numeric `at`, else `InvalidOptionError` on `field`, also when none is
 * and it is `required`); `key` and `cost` checked too.
 */
export function parseEarlierCharge(
  core: CallRules,
  args: EarlierChargeArguments,
  field: string,
  required = false,
): { algorithm: Algorithm; decision: Decision | undefined } {
  const { key, cost, algorithmOrDecision, decision } = args;
  checkKey(key);
  const given = isDecisionLike(algorithmOrDecision) ? algorithmOrDecision : decision;
  const algorithm =
    isDecisionLike(algorithmOrDecision) || algorithmOrDecision === undefined
      ? ownAlgorithm(core)
      : core.checkCallAlgorithm(algorithmOrDecision);
  checkLimiterCost(core, cost, algorithm);
  if (given === undefined ? required : given === null || typeof given !== 'object' || typeof given.at !== 'number') {
    throw new InvalidOptionError(field, given, 'the decision that consume() returned for this request');
  }
  return { algorithm, decision: given };
}

/** `value` as a promise. */
export function promised<T>(value: MaybePromise<T>): Promise<T> {
  return value instanceof Promise ? value : Promise.resolve(value);
}

/** The options of a charge (`consume(key, cost, options)`, `reserve(key, cost, options)`), beside its cost. */
export interface ChargeOptions {
  /** The rate algorithm of this call, as `consume(key, cost, algorithm)`. Default: the limiter's own. */
  algorithm?: Algorithm;
  /**
   * The request's idempotency key (a string of at most 512 characters; undefined: none): a retry with
   * the same key, of the same key and limit, within the limiter's `idempotencyTtl`, gets the earlier
   * admitting decision back and is charged nothing (see `Store.charge`). A denial is never replayed.
   */
  idempotencyKey?: string;
  /** What makes a retry the same request (default: its cost): an id reused with another fingerprint is charged as new (its receipt says `conflict`: see `receiptOf`). */
  fingerprint?: string;
}

/** What a limiter's core gives the rules of a charge's options. */
export interface ChargeRules extends CallRules {
  readonly store: { readonly capabilities: StoreCapabilities };
  readonly idempotency: IdempotencyConfig;
}

/** Where a verb's charge options were given: `field` names them in errors; `extra`, more names its options take (a reservation's `maxDelay`). */
export interface OptionsAt {
  readonly field: string;
  readonly extra?: readonly string[];
}

/**
 * A charge's third argument: an algorithm (the older form), or {@link ChargeOptions} (with `at.extra`
 * more names allowed). Returns the call's algorithm and its idempotent
 * charge; `InvalidOptionError` on `field` for anything else, `UnsupportedError` for an idempotency
 * key on a store without `capabilities.idempotency`.
 */
export function chargeOptionsOf(
  core: ChargeRules,
  value: unknown,
  cost: unknown,
  at: OptionsAt,
): { algorithm: Algorithm | undefined; idempotency: IdempotentCharge | undefined } {
  const field = at.field;
  // Not an object of charge options (an algorithm, or a value the algorithm's rule refuses): the older form.
  const names = ['algorithm', 'idempotencyKey', 'fingerprint', ...(at.extra ?? [])];
  if (
    value === null ||
    typeof value !== 'object' ||
    isAlgorithm(value) ||
    (Object.keys(value).length > 0 && !names.some((n) => n in value))
  ) {
    return { algorithm: value as Algorithm | undefined, idempotency: undefined };
  }
  const o = checkOptions(value, names, field);
  if (o.idempotencyKey === undefined)
    return { algorithm: o.algorithm as Algorithm | undefined, idempotency: undefined };
  requireCapability(core.store, 'idempotency', `${field}.idempotencyKey`);
  if (o.fingerprint !== undefined && typeof o.fingerprint !== 'string')
    throw new InvalidOptionError(`${field}.fingerprint`, o.fingerprint, 'a string');
  const fingerprint = (o.fingerprint as string | undefined) ?? `cost ${String(cost)}`;
  return {
    algorithm: o.algorithm as Algorithm | undefined,
    idempotency: idempotentCharge(o.idempotencyKey, fingerprint, core.idempotency, `${field}.idempotencyKey`),
  };
}
