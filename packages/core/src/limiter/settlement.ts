import type { Algorithm, Settlement } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { errorDocsUrl, InvalidCostError, InvalidOptionError, UnsupportedError } from '../errors.js';
import { markSettled, tookNothing } from '../store/charge-marks.js';
import type { MaybePromise } from '../store/interface.js';
import { emitWarning } from '../runtime.js';

/** What a settle goes through: the paths of its limiter's core. */
export interface SettleHost {
  /** The limit's name, for the warning. */
  readonly name: string;
  /** `maxDebt` as configured; undefined: the charging algorithm's limit. */
  readonly maxDebt: number | undefined;
  /** The charge was spent from a quota lease's live block: `units` (negative: taken) moved into it; false: go to the store. */
  refundIntoBlock(storeKey: string, units: number, algorithm: Algorithm, decision: Decision): boolean;
  /** True when the limiter's charges come from quota leases (a decision then has no record of its own in the store). */
  readonly leased: boolean;
  /** The store's settle, through the guard (timeout, failure reported) and the deny cache. */
  settleStored(storeKey: string, algorithm: Algorithm, settlement: Settlement): MaybePromise<void>;
  /** The observers hear of it. */
  told(estimate: number, actual: number): void;
  /** The warning was given (it is given once). */
  warned: boolean;
  /** The store settles (`capabilities.settle`). */
  readonly settles: boolean;
}

/** The real cost of a settle: a finite number, 0 or more; an {@link InvalidCostError} otherwise. */
export function checkActualCost(actual: unknown): number {
  if (typeof actual !== 'number' || !Number.isFinite(actual) || actual < 0) throw new InvalidCostError(actual, true);
  return actual;
}

/**
 * Settles the charge of `decision` (a consume of `cost` units of `storeKey` under `algorithm`) at
 * `actual` units: once (a second settle, or one after a give-back, is ignored with the warning
 * `RL_ALREADY_SETTLED`, once per limiter); nothing for a decision that charged nothing in the store
 * (a denial, a decision with a `reason`, one its group gave back). With quota leases a charge spent
 * from a live block is settled into that block; otherwise the store settles it (a leased charge has
 * no record of its own: the difference is charged or given back as a charge of its own).
 */
export function settleCharge(host: SettleHost, storeKey: string, cost: number, actual: number, algorithm: Algorithm, decision: Decision): MaybePromise<void> {
  if (!host.settles) throw new UnsupportedError('This store does not settle charges (capabilities.settle): use a store that does, such as MemoryStore or RedisStore.');
  if (!decision.allowed || decision.reason !== undefined || tookNothing(decision)) return;
  if (!markSettled(decision)) {
    if (!host.warned) {
      host.warned = true;
      emitWarning(
        `A charge of limit "${host.name}" was settled twice, or after it was given back: the second settle is ignored. Settle each request once. (rl, warned once per limiter.) See ${errorDocsUrl('RL_ALREADY_SETTLED')}`,
        { code: 'RL_ALREADY_SETTLED' },
      );
    }
    return;
  }
  if (actual === cost) return;
  host.told(cost, actual);
  if (host.leased && host.refundIntoBlock(storeKey, cost - actual, algorithm, decision)) return;
  const { at: chargedAt, delayMs } = decision;
  const maxDebt = host.maxDebt ?? algorithm.limit;
  const settlement = host.leased ? { cost: Math.max(0, cost - actual), actual: Math.max(0, actual - cost) } : { cost, actual };
  return host.settleStored(storeKey, algorithm, { ...settlement, chargedAt, delayMs, maxDebt });
}

/** The `maxDebt` option: a finite number of units, 0 or more. */
export function checkMaxDebt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InvalidOptionError(field, value, 'a finite number of units, 0 or more (default: the limit)');
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
