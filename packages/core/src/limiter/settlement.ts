import { InvalidCostError, InvalidOptionError } from '../errors.js';

/** The real cost of a settle: a finite number, 0 or more; an {@link InvalidCostError} otherwise. */
export function checkActualCost(actual: unknown): number {
  if (typeof actual !== 'number' || !Number.isFinite(actual) || actual < 0) throw new InvalidCostError(actual, true);
  return actual;
}

/** The `maxDebt` option: a finite number of units, 0 or more. */
export function checkMaxDebt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new InvalidOptionError(field, value, 'a finite number of units, 0 or more (default: the limit)');
  return value;
}

/** The option of `createLimiter` that bounds a settle. */
export interface SettleOptions {
  /**
   * How far a settle above the estimate (`settle`, a middleware's `actualCost`) may take the limit past
   * its quota, in units: a token bucket's balance goes down to `−maxDebt`, a window's count up to its
   * limit plus `maxDebt` (a leaky bucket holds none: at most full). A finite number of 0 or more;
   * default: the algorithm's limit (its capacity), so one request's debt is at most one full quota.
   */
  maxDebt?: number;
}
