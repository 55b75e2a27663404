import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import type { LimiterCore } from '../limiter/core.js';
import { tookNothing, wasNotAsked, wasReplayed } from '../store/charge-marks.js';
import type { ChargeGroup, MaybePromise, Store } from '../store/interface.js';
import type { Run } from './run.js';

/** A charge that failed: what the engine gives back for, then throws. */
export interface ChargeFailure {
  readonly error: unknown;
}

/** What the answers of a run charged together come to: a failure, or the limit that denies it (-1: admitted). */
export interface Outcome {
  readonly failure?: ChargeFailure;
  readonly deniedBy: number;
}

const ADMITTED: Outcome = { deniedBy: -1 };

/** The run policy a {@link Together} needs (see `RunPolicy`). */
export interface TogetherPolicy {
  /** The longest hold of an admitted request (ms; Infinity: no bound). */
  readonly holdMs: number;
  /** Per limit: true for a dry-run limit; undefined when there is none. */
  readonly dryRun: readonly boolean[] | undefined;
  /** The `maxDelayMs` of a rate limit's charge with `algorithm` (undefined: a consume), as the engine charges it. */
  readonly maxDelayOf: (algorithm: Algorithm) => number | undefined;
}

/**
 * How a composition charges its limits when two or more rate limits share a store that decides a
 * request's consumes together (`Store.group`: the Redis store, one script call per request): every
 * limit's charge is issued at once, in order, with each such store's group open, so the store decides
 * them in one atomic step, all-or-nothing; the engine then reads the decisions in order, as it reads
 * those of the charges it makes one after another. A charge answered at once with an enforced denial
 * (the deny cache, a failure policy that denies) stops the issuing: the later limits are not charged.
 */
export class Together {
  private readonly holdMs: number;
  private readonly dryRun: readonly boolean[] | undefined;
  private readonly maxDelayOf: (algorithm: Algorithm) => number | undefined;

  private constructor(
    private readonly cores: readonly LimiterCore[],
    /** The stores that group, in the order first met. */
    private readonly stores: readonly Store[],
    /** Per limit: the index of its store in {@link stores}, or -1 (a concurrency limit, a store that does not group, a limit with quota leases). */
    private readonly groupOf: readonly number[],
    policy: TogetherPolicy,
  ) {
    this.holdMs = policy.holdMs;
    this.dryRun = policy.dryRun;
    this.maxDelayOf = policy.maxDelayOf;
  }

  /** The grouping of `cores`, or undefined when no store that groups holds two of its rate limits (then the engine charges one after another). */
  static of(cores: readonly LimiterCore[], policy: TogetherPolicy): Together | undefined {
    const stores: Store[] = [];
    const counts: number[] = [];
    const groupOf = cores.map((core) => {
      if (core.isConcurrencyLimit || core.quota !== undefined || typeof core.store.group !== 'function') return -1;
      let at = stores.indexOf(core.store);
      if (at === -1) at = stores.push(core.store) - 1;
      counts[at] = (counts[at] ?? 0) + 1;
      return at;
    });
    if (!counts.some((count) => count >= 2)) return undefined;
    return new Together(cores, stores, groupOf, policy);
  }

  /**
   * The first enforced rate limit of `run` whose charge the deny cache denies (its decision put in
   * `run`, told to the observers), or -1: such a run is denied before anything is charged.
   */
  cachedDenial(run: Run): number {
    for (let i = 0; i < this.cores.length; i++) {
      if (this.dryRun?.[i] === true) continue;
      const cached = this.cached(run, i, true);
      if (cached === undefined) continue;
      run.decisions[i] = cached;
      return i;
    }
    return -1;
  }

  /** The deny cache's denial of limit `i`'s charge in `run` (a rate limit's), or undefined. */
  private cached(run: Run, i: number, observe: boolean): Decision | undefined {
    const core = this.cores[i]!;
    // An idempotent charge is the store's to answer: its retry may be a replay.
    if (core.isConcurrencyLimit || run.idempotency?.[i] !== undefined) return undefined;
    const algorithm = run.algorithms?.[i] ?? core.algorithm!;
    return core.cachedDenial(run.keys[i]!, run.costs[i]!, algorithm, this.maxDelayOf(algorithm), observe);
  }

  /**
   * What the answers in `run` come to. The first enforced denial, in order, denies it (a consume its
   * group never asked is no denial). Admitted, a limit whose group took nothing for it (given back,
   * or never asked: the answer that made the group do so was replaced by that limit's failure policy,
   * a timeout or a fallback) is charged again, alone, as if charged one after another.
   */
  outcome(run: Run, charge: (i: number) => MaybePromise<Decision>): MaybePromise<Outcome> {
    const by = this.firstDenial(run);
    if (by !== -1) return { deniedBy: by };
    // Held longer than the run allows: the engine denies it, and what was given back stays so.
    return this.holdExceeded(run) ? ADMITTED : this.recharge(run, charge, this.uncharged(run, 0));
  }

  /** True when an enforced limit's decision in `run` would hold the request longer than `holdMs`. */
  private holdExceeded(run: Run): boolean {
    return run.decisions.some((d, i) => d !== undefined && d.allowed && this.dryRun?.[i] !== true && d.delayMs > this.holdMs);
  }

  /** The first limit of `run` whose decision is an enforced denial (a consume its group never asked is none), or -1. */
  private firstDenial(run: Run): number {
    const decisions = run.decisions;
    for (let i = 0; i < decisions.length; i++) {
      const decision = decisions[i];
      if (decision !== undefined && !decision.allowed && this.dryRun?.[i] !== true && !wasNotAsked(decision)) return i;
    }
    return -1;
  }

  /** Charges, alone and in order, the limits from `i` on whose group took nothing for them. */
  private recharge(run: Run, charge: (i: number) => MaybePromise<Decision>, i: number): MaybePromise<Outcome> {
    for (; i !== -1; i = this.uncharged(run, i + 1)) {
      let answer: MaybePromise<Decision>;
      try {
        answer = charge(i);
      } catch (error) {
        return { failure: { error }, deniedBy: -1 };
      }
      if (answer instanceof Promise) {
        const at = i;
        return answer.then(
          (decision) => (this.denies(run, at, decision) ? { deniedBy: at } : this.recharge(run, charge, this.uncharged(run, at + 1))),
          (error: unknown) => ({ failure: { error }, deniedBy: -1 }),
        );
      }
      if (this.denies(run, i, answer)) return { deniedBy: i };
    }
    return ADMITTED;
  }

  /** Puts limit `i`'s `decision` in `run`; true when it is an enforced denial. */
  private denies(run: Run, i: number, decision: Decision): boolean {
    run.decisions[i] = decision;
    return !decision.allowed && this.dryRun?.[i] !== true;
  }

  /** The first limit from `from` on whose decision took nothing (see `tookNothing`), or -1. */
  private uncharged(run: Run, from: number): number {
    const decisions = run.decisions;
    for (let i = from; i < decisions.length; i++) {
      const decision = decisions[i];
      // A replay took nothing, and needs nothing: its request was charged when first admitted.
      if (decision !== undefined && tookNothing(decision) && !wasReplayed(decision)) return i;
    }
    return -1;
  }

  /**
   * Issues `charge(i)` for every limit, in order, with the groups open, and puts each decision in
   * `run.decisions` as it comes; resolves (or returns, when every answer was synchronous) once all
   * are in, with the first failure if a charge threw or rejected (the decisions that did come are in
   * `run` for the give-back). A dry-run limit the deny cache would deny, and a limit with quota leases
   * (whose blocks are no part of a request's group), are asked only once the others have answered, and
   * only when no enforced limit before it denied: as one charged after them, it is not asked (nor
   * observed) after a denial.
   */
  charge(run: Run, charge: (i: number) => MaybePromise<Decision>): MaybePromise<ChargeFailure | undefined> {
    const groups: ChargeGroup[] = this.stores.map((store) => store.group!(this.holdMs));
    let waiting = 0;
    let allIn: (() => void) | undefined;
    const deferred: number[] = [];
    let failure: ChargeFailure | undefined;
    // One promise for every answer (no Promise.all and its per-element functions).
    const answered = (): void => {
      if (--waiting === 0 && allIn !== undefined) allIn();
    };
    try {
      for (let i = 0; i < run.decisions.length; i++) {
        const at = this.groupOf[i]!;
        const enforced = this.dryRun?.[i] !== true;
        if (this.cores[i]!.quota !== undefined || (!enforced && this.cached(run, i, false) !== undefined)) {
          deferred.push(i);
          continue;
        }
        if (at !== -1) groups[at]!.enforced = enforced;
        let answer: MaybePromise<Decision>;
        try {
          answer = charge(i);
        } catch (error) {
          failure = { error };
          break;
        }
        if (answer instanceof Promise) {
          waiting++;
          answer.then(
            (decision) => {
              run.decisions[i] = decision;
              answered();
            },
            (error: unknown) => {
              failure ??= { error };
              answered();
            },
          );
          continue;
        }
        run.decisions[i] = answer;
        if (!answer.allowed && enforced) break;
      }
    } finally {
      // Every group is closed, whatever one of them throws: an open group would take in later consumes.
      const error = closeAll(groups);
      if (error !== undefined) failure ??= { error };
    }
    const rest = (): MaybePromise<ChargeFailure | undefined> => failure ?? this.askDeferred(run, deferred, 0, charge);
    if (waiting === 0) return rest();
    return new Promise<void>((resolve) => (allIn = resolve)).then(rest);
  }

  /** Charges the deferred limits from `deferred[k]` on, in order, up to the first enforced denial before one of them. */
  private askDeferred(run: Run, deferred: readonly number[], k: number, charge: (i: number) => MaybePromise<Decision>): MaybePromise<ChargeFailure | undefined> {
    for (; k < deferred.length; k++) {
      const i = deferred[k]!;
      const denier = this.firstDenial(run);
      if (denier !== -1 && denier < i) return undefined;
      let answer: MaybePromise<Decision>;
      try {
        answer = charge(i);
      } catch (error) {
        return { error };
      }
      if (answer instanceof Promise) {
        const next = k + 1;
        return answer.then(
          (decision) => {
            run.decisions[i] = decision;
            return this.askDeferred(run, deferred, next, charge);
          },
          (error: unknown) => ({ error }),
        );
      }
      run.decisions[i] = answer;
    }
    return undefined;
  }
}

/** Closes every group; the first error one of them threw, if any. */
function closeAll(groups: readonly ChargeGroup[]): unknown {
  let first: unknown;
  for (const group of groups) {
    try {
      group.close();
    } catch (error) {
      first ??= error;
    }
  }
  return first;
}
