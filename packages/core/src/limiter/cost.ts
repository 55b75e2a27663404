import { checkCost, type Algorithm } from '../algorithm.js';
import { CostExceedsCapacityError } from '../errors.js';

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
  limiter: { readonly maxCost: number },
  cost: unknown,
  algorithm: Algorithm,
  allowZero = false,
): number {
  const maxCost = Math.min(limiter.maxCost, algorithm.maxCost);
  if (isChargeableCost(cost, maxCost) || (allowZero && cost === 0)) return cost as number;
  checkCost(algorithm, cost, allowZero);
  throw exceedsMaxCost(cost as number, limiter.maxCost, algorithm);
}

function exceedsMaxCost(cost: number, maxCost: number, algorithm: Algorithm): CostExceedsCapacityError {
  const error = new CostExceedsCapacityError(cost, maxCost, algorithm.kind);
  if (maxCost < algorithm.maxCost) {
    error.message = `Cost ${cost} is larger than this limiter's maxCost ${maxCost}. Raise createLimiter.maxCost (at most the ${algorithm.kind} capacity ${algorithm.maxCost}) or lower the cost.`;
  }
  return error;
}
