import type { Algorithm } from '../algorithm.js';
import type { Composition } from '../compose/engine.js';
import { InvalidKeyError } from '../errors.js';
import { checkLimiterCost } from '../limiter/index.js';
import type { MaybePromise } from '../store/interface.js';
import type { CostFunction, KeyFunction, LimitConfig, SkipFunction } from './options.js';
import type { RateLimitResult } from './result.js';

/** How one limit's key and cost are found for a request, fixed at creation. */
interface Resolution<Req> {
  readonly algorithm: Algorithm;
  /** The largest cost a cost function may return for this limit (its `maxCost`, else the capacity). */
  readonly maxCost: number;
  /** The key function (the limit's own, or the middleware's). */
  readonly key: KeyFunction<Req>;
  /** An earlier limit with the same key function (its key is reused), or -1 to call `key`. */
  readonly keyFrom: number;
  /** The cost function, or undefined when the cost is the constant {@link cost}. */
  readonly costOf: CostFunction<Req> | undefined;
  /** The constant cost, checked against the algorithm at creation (when `costOf` is undefined). */
  readonly cost: number;
  /** An earlier limit with the same cost function (its answer is reused, then checked for this limit), or -1 to call `costOf`. */
  readonly costFrom: number;
}

/**
 * The boundary between a request and the composition engine: runs `skip`, then resolves each
 * limit's key and cost once (a function shared by several limits is called once per request) and
 * checks them (a non-empty string; a cost that a function returned, against each limit's `maxCost`,
 * else its capacity; a constant cost was checked at creation), in the order of the limits, key
 * before cost. Only then does the engine charge anything: a bad key or cost charges no limit.
 *
 * Functions that return plain values are not awaited: with limiters that answer synchronously, the
 * whole evaluation is synchronous.
 */
export class Evaluation<Req> {
  private readonly resolutions: readonly Resolution<Req>[];

  constructor(
    limits: readonly LimitConfig<Req>[],
    sharedKey: KeyFunction<Req>,
    private readonly skip: SkipFunction<Req> | undefined,
    private readonly composition: Composition<RateLimitResult>,
  ) {
    const firstSharedKey = limits.findIndex((l) => l.key === undefined);
    const firstSharedCost = limits.findIndex((l) => l.sharedCost);
    this.resolutions = limits.map((l, i) => ({
      algorithm: l.algorithm,
      maxCost: l.maxCost ?? l.algorithm.maxCost,
      key: l.key ?? sharedKey,
      keyFrom: l.key === undefined && firstSharedKey < i ? firstSharedKey : -1,
      costOf: typeof l.cost === 'number' ? undefined : l.cost,
      cost: typeof l.cost === 'number' ? l.cost : 0,
      costFrom: l.sharedCost && firstSharedCost < i ? firstSharedCost : -1,
    }));
  }

  /**
   * The result for `req`, or `undefined` when `skip` says so: directly when every function and
   * limiter answered synchronously, otherwise a promise. A bad key or cost, or a function that
   * throws, throws on the direct path and rejects otherwise; either way no limit was charged.
   */
  readonly decide = (req: Req): MaybePromise<RateLimitResult | undefined> => {
    const skip = this.skip;
    if (skip !== undefined) {
      const skipped = skip(req);
      if (typeof skipped !== 'boolean') return this.afterSkip(req, skipped);
      if (skipped) return undefined;
    }
    return this.charge(req);
  };

  private async afterSkip(req: Req, skipped: Promise<boolean>): Promise<RateLimitResult | undefined> {
    if (await skipped) return undefined;
    return this.charge(req);
  }

  private charge(req: Req): MaybePromise<RateLimitResult> {
    const n = this.resolutions.length;
    const keys: string[] = n === 1 ? [''] : new Array<string>(n);
    const costs: number[] = n === 1 ? [0] : new Array<number>(n);
    const pending = this.resolve(req, keys, costs, 0);
    if (pending !== undefined) return pending.then(() => this.composition.run(keys, costs));
    return this.composition.run(keys, costs);
  }

  /**
   * Fills in the keys and costs of limits `from..`, in order (`keyKnown`: limit `from`'s key is in
   * already): returns undefined when done synchronously, or a promise of the rest once a function
   * answered with one.
   */
  private resolve(req: Req, keys: string[], costs: number[], from: number, keyKnown = false): Promise<void> | undefined {
    const resolutions = this.resolutions;
    for (let i = from; i < resolutions.length; i++) {
      const r = resolutions[i]!;
      if (!keyKnown) {
        const key: unknown = r.keyFrom === -1 ? r.key(req) : keys[r.keyFrom];
        if (typeof key !== 'string') return this.awaitKey(req, keys, costs, i, key);
        if (key.length === 0) throw new InvalidKeyError(key);
        keys[i] = key;
      }
      keyKnown = false;
      const costOf = r.costOf;
      if (costOf === undefined) {
        costs[i] = r.cost;
        continue;
      }
      const cost: unknown = r.costFrom === -1 ? costOf(req) : costs[r.costFrom];
      if (typeof cost !== 'number') return this.awaitCost(req, keys, costs, i, cost);
      costs[i] = checkLimiterCost(r, cost);
    }
    return undefined;
  }

  /** Limit i's key function answered with a promise (its cost function is called only once the key is known to be good). */
  private async awaitKey(req: Req, keys: string[], costs: number[], i: number, pending: unknown): Promise<void> {
    const key: unknown = await pending;
    if (typeof key !== 'string' || key.length === 0) throw new InvalidKeyError(key);
    keys[i] = key;
    await this.resolve(req, keys, costs, i, true);
  }

  private async awaitCost(req: Req, keys: string[], costs: number[], i: number, pending: unknown): Promise<void> {
    costs[i] = checkLimiterCost(this.resolutions[i]!, await pending);
    await this.resolve(req, keys, costs, i + 1);
  }
}
