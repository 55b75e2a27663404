import type { Decision } from '../decision.js';
import { InvalidOptionError, UnsupportedError } from '../errors.js';
import { coreOf } from '../limiter/core-registry.js';
import { checkLimiterCost, Limiter } from '../limiter/index.js';
import type { MaybePromise } from '../store/interface.js';
import { Composition, PERMITS } from './engine.js';
import { Run } from './run.js';
import { actualPerLimit, settleRun } from './settle-run.js';
import type { Observer } from '../observe/observer.js';
import { checkOptions, optionalBoolean } from '../options.js';

/** The decision of several limits applied together. */
export interface CombinedDecision extends Decision {
  /**
   * Each limit's decision, in the order of the limiters; limits after a denying one were not asked
   * (`undefined`). A concurrency limit's decision carries its `release()`.
   */
  readonly decisions: readonly (Decision | undefined)[];
  /** Index of the limit that denied, or -1 when all admitted. */
  readonly deniedBy: number;
  /**
   * Returns every concurrency permit this decision holds; call it once the work ends (extra calls do
   * nothing). Does nothing for a denial (it holds nothing) or a group without concurrency limits.
   */
  release(): Promise<void>;
  /**
   * Settles this request's charges at its real cost once its work is done (see `Limiter.settle`):
   * one number for every rate limit, or one per limiter (`undefined`: not settled). Once; nothing for
   * a denial (it charged nothing). Throws `InvalidCostError` for a bad cost, before anything is settled.
   */
  settle(actualCost: number | readonly (number | undefined)[]): Promise<void>;
}

const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Several limits applied to one request, for example per tenant and per user, and a concurrency
 * limit. The request is admitted only if every limit admits it. Limits are asked in order; when one
 * denies, the later ones are not asked, and what the earlier ones took is given back (units by
 * `undo`, permits by release), so a denial by one limit uses up no quota in the others. Between the
 * admission and the give-back another request may briefly see that quota as used: the group can
 * wrongly deny, never wrongly admit. A store that decides a request's limits together (`RedisStore`:
 * one script call for the limits it holds, one per slot on a Cluster) leaves no such window: the
 * limits are decided at once, all-or-nothing, in one atomic step.
 *
 * The combined decision's fields are those of the denying limit, or, when all admit, of the limit
 * with the fewest `remaining` among those whose store answered (the longest `delayMs` applies).
 * Put the limit most likely to deny first: it saves calls to the others.
 */
export class LimiterGroup {
  readonly limiters: readonly Limiter[];
  /** True when {@link consumeSync} works: every limiter answers synchronously (local stores, rate limits). */
  readonly synchronous: boolean;
  private readonly composition: Composition<CombinedDecision>;

  constructor(limiters: readonly Limiter[]) {
    if (!Array.isArray(limiters) || limiters.length === 0) {
      throw new InvalidOptionError('combineLimiters.limiters', limiters, 'a non-empty array of limiters');
    }
    limiters.forEach((limiter, i) => {
      if (!(limiter instanceof Limiter))
        throw new InvalidOptionError(`combineLimiters.limiters[${i}]`, limiter, 'a limiter from createLimiter()');
      if (limiter.algorithm === undefined)
        throw new InvalidOptionError(
          `combineLimiters.limiters[${i}]`,
          limiter,
          'a limiter with an algorithm of its own (createLimiter({ algorithm, ... }))',
        );
    });
    this.limiters = [...limiters];
    this.synchronous = this.limiters.every((limiter) => limiter.synchronous);
    this.composition = new Composition<CombinedDecision>(this.limiters, combinedDecision);
  }

  /**
   * Applies every limit. `keys` gives each limiter its key (one string for all, or one per limiter);
   * `cost` (default 1) is charged to each rate limit, or pass one cost per limiter (a concurrency
   * limit ignores its cost: a request holds one permit). Every key and cost is checked before any
   * limit is charged: a bad one rejects with its {@link RateLimitError} and changes no state. Should
   * a later limit still throw, what the earlier ones took is given back before the error propagates.
   */
  consume(keys: string | readonly string[], cost: number | readonly number[] = 1): Promise<CombinedDecision> {
    try {
      const result = this.run(keys, cost);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link consume} without a promise, for groups whose limiters all answer synchronously
   * ({@link synchronous}: local stores such as the memory store, rate limits). Throws what `consume`
   * rejects with, and {@link UnsupportedError} for a group that is not synchronous.
   */
  consumeSync(keys: string | readonly string[], cost: number | readonly number[] = 1): CombinedDecision {
    if (!this.synchronous) {
      throw new UnsupportedError(
        'group.consumeSync() needs limiters that answer synchronously (local stores such as MemoryStore, rate limits only); otherwise use await group.consume().',
      );
    }
    return this.run(keys, cost) as CombinedDecision;
  }

  /**
   * Limit i's key and cost, each checked in that order before anything is charged: the limiter's key
   * rule (a non-empty string) and the cost rule of its algorithm (1 for a concurrency limit).
   */
  private run(keys: string | readonly string[], cost: number | readonly number[]): MaybePromise<CombinedDecision> {
    const limiters = this.limiters;
    const n = limiters.length;
    if (typeof keys !== 'string' && (!Array.isArray(keys) || keys.length !== n))
      throw new InvalidOptionError('keys', keys, `${n} keys, one per limiter`);
    if (typeof cost !== 'number' && (!Array.isArray(cost) || cost.length !== n))
      throw new InvalidOptionError('cost', cost, `${n} costs, one per limiter`);
    const run = new Run(n);
    for (let i = 0; i < n; i++) {
      const limiter = limiters[i]!;
      const key = typeof keys === 'string' ? keys : keys[i]!;
      limiter.storageKey(key);
      run.keys[i] = key;
      run.costs[i] = limiter.isConcurrencyLimit
        ? 1
        : checkLimiterCost(limiter, typeof cost === 'number' ? cost : cost[i], limiter.algorithm!);
    }
    return this.composition.run(run);
  }
}

function released(): Promise<void> {
  return RESOLVED;
}

/**
 * The combined decision of a finished `run` of `composition`: the fields of the denying limit's
 * decision, or of the binding one's with the run's longest delay (its `reason` when it has one), then
 * every limit's decision, the denying limit, `release` and `settle`. Built field by field: a copy by
 * spread with more fields after it costs more than the rest of the run on Node 20 (see
 * docs/design/architecture.md).
 */
function combinedDecision(run: Run, composition: Composition<CombinedDecision>): CombinedDecision {
  const { decisions, deniedBy } = run;
  const d = decisions[deniedBy === -1 ? run.binding : deniedBy]!;
  const delayMs = deniedBy === -1 ? run.delayMs : d.delayMs;
  const release = composition.hasLeases && deniedBy === -1 ? releaseOf(composition, run) : released;
  const settle = settleOf(composition, run, deniedBy);
  const { allowed, limit, remaining, resetMs, retryAfterMs, policy, at, reason } = d;
  return reason === undefined
    ? { allowed, limit, remaining, resetMs, retryAfterMs, delayMs, policy, at, decisions, deniedBy, release, settle }
    : {
        allowed,
        limit,
        remaining,
        resetMs,
        retryAfterMs,
        delayMs,
        policy,
        at,
        reason,
        decisions,
        deniedBy,
        release,
        settle,
      };
}

/** The `release` of an admitted `run` that holds permits: gives them back (once: see `Composition.giveBack`). */
function releaseOf(composition: Composition<CombinedDecision>, run: Run): () => Promise<void> {
  return () => composition.giveBack(run, PERMITS) ?? RESOLVED;
}

/** The `settle` of a finished `run` (`deniedBy`: its denying limit, -1 when admitted; a denial settles nothing). */
function settleOf(composition: Composition<CombinedDecision>, run: Run, deniedBy: number): CombinedDecision['settle'] {
  return (actual) => {
    const perLimit = actualPerLimit(actual, run.decisions.length, undefined, 'combined.settle.actualCost');
    return (deniedBy === -1 ? settleRun(composition, run, perLimit) : undefined) ?? RESOLVED;
  };
}

/** Combines limiters into one {@link LimiterGroup}: admitted only if all admit. */
export function combineLimiters(limiters: readonly Limiter[], options: CombineOptions = {}): LimiterGroup {
  const { observer, observeKeys } = checkOptions(options, ['observer', 'observeKeys'], 'combineLimiters.options');
  const group = new LimiterGroup(limiters);
  if (observer !== undefined) {
    const keys = optionalBoolean(observeKeys, 'combineLimiters.options.observeKeys', false);
    for (const limiter of group.limiters)
      coreOf(limiter)!.observe(observer as Observer, {
        limit: limiter.name,
        keys,
        dryRun: false,
        field: 'combineLimiters.options.observer',
      });
  }
  return group;
}

/** Options of {@link combineLimiters}. */
export interface CombineOptions {
  /** Observes every limit of the group (each under its limiter's `name`); the same as `limiter.observe(observer)` on each. */
  observer?: Observer;
  /** Put the request's key in the observer's events (default false). */
  observeKeys?: boolean;
}
