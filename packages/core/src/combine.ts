import { checkCost } from './algorithm.js';
import { reportsQuota, type Decision } from './decision.js';
import { InvalidOptionError } from './errors.js';
import { Limiter } from './limiter/index.js';

/** The decision of several limits applied together. */
export interface CombinedDecision extends Decision {
  /** Each limit's decision, in the order of the limiters; limits after a denying one were not asked (`undefined`). */
  readonly decisions: readonly (Decision | undefined)[];
  /** Index of the limit that denied, or -1 when all admitted. */
  readonly deniedBy: number;
}

/**
 * Several limits applied to one request, for example per tenant and per user. The request is
 * admitted only if every limit admits it. Limits are asked in order; when one denies, the later ones
 * are not asked, and the units the earlier ones had admitted are given back (`undo`), so a denial
 * by one limit uses up no quota in the others. Between the admission and the rollback another request
 * may briefly see that quota as used: the group can wrongly deny, never wrongly admit.
 *
 * The combined decision's fields are those of the denying limit, or, when all admit, of the limit
 * with the fewest `remaining` among those whose store answered (the longest `delayMs` applies).
 * Put the limit most likely to deny first: it saves calls to the others.
 */
export class LimiterGroup {
  readonly limiters: readonly Limiter[];

  constructor(limiters: readonly Limiter[]) {
    if (!Array.isArray(limiters) || limiters.length === 0) {
      throw new InvalidOptionError('combineLimiters.limiters', limiters, 'a non-empty array of limiters');
    }
    limiters.forEach((limiter, i) => {
      if (!(limiter instanceof Limiter)) throw new InvalidOptionError(`combineLimiters.limiters[${i}]`, limiter, 'a limiter from createLimiter()');
      if (limiter.algorithm.stateKind === 'leases') {
        throw new InvalidOptionError(`combineLimiters.limiters[${i}]`, limiter.algorithm.kind, 'a rate limit; take concurrency permits with limiter.acquire()');
      }
    });
    this.limiters = [...limiters];
  }

  /**
   * Applies every limit. `keys` gives each limiter its key (one string for all, or one per limiter);
   * `cost` (default 1) is charged to each limit, or pass one cost per limiter.
   * Every key and cost is checked before any limit is charged: a bad one rejects with its
   * {@link RateLimitError} and changes no state. Should a later limit still throw, the units the
   * earlier ones admitted are given back before the error propagates.
   */
  async consume(keys: string | readonly string[], cost: number | readonly number[] = 1): Promise<CombinedDecision> {
    const n = this.limiters.length;
    const keyOf = (i: number): string => (typeof keys === 'string' ? keys : keys[i]!);
    const costOf = (i: number): number => (typeof cost === 'number' ? cost : cost[i]!);
    if (typeof keys !== 'string' && (!Array.isArray(keys) || keys.length !== n)) throw new InvalidOptionError('keys', keys, `${n} keys, one per limiter`);
    if (typeof cost !== 'number' && (!Array.isArray(cost) || cost.length !== n)) throw new InvalidOptionError('cost', cost, `${n} costs, one per limiter`);
    for (let i = 0; i < n; i++) {
      const limiter = this.limiters[i]!;
      limiter.storageKey(keyOf(i));
      checkCost(limiter.algorithm, costOf(i));
    }
    const decisions: (Decision | undefined)[] = new Array(n).fill(undefined);
    /** Gives back what limits 0..i-1 admitted (fail-open decisions charged nothing). */
    const rollback = (i: number) =>
      Promise.all(decisions.slice(0, i).map((d, j) => (d?.allowed && d.reason === undefined ? this.limiters[j]!.undo(keyOf(j), costOf(j)) : undefined)));
    for (let i = 0; i < n; i++) {
      let decision: Decision;
      try {
        decision = await this.limiters[i]!.consume(keyOf(i), costOf(i));
      } catch (error) {
        await rollback(i);
        throw error;
      }
      decisions[i] = decision;
      if (!decision.allowed) {
        await rollback(i);
        return { ...decision, decisions, deniedBy: i };
      }
    }
    let binding = decisions[0]!;
    let delayMs = 0;
    for (const d of decisions as Decision[]) {
      // A fail-open decision (the store failed and the policy allowed) reports no real quota: it binds
      // only when every limit failed open.
      if ((d.remaining < binding.remaining && reportsQuota(d)) || !reportsQuota(binding)) binding = d;
      if (d.delayMs > delayMs) delayMs = d.delayMs;
    }
    return { ...binding, delayMs, decisions, deniedBy: -1 };
  }
}

/** Combines limiters into one {@link LimiterGroup}: admitted only if all admit. */
export function combineLimiters(limiters: readonly Limiter[]): LimiterGroup {
  return new LimiterGroup(limiters);
}
