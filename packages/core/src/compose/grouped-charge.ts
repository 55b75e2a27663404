import { StoreError } from '../errors.js';
import type { LimiterCore } from '../limiter/core.js';
import type { ChargeAnswer, StoreCall } from '../limiter/charge-path.js';
import type { Charge, ChargeAllOptions, Charged, MaybePromise, Store, TimedCharge } from '../store/interface.js';
import type { Run } from './run.js';

/** A charge that failed: what the engine gives back for, then throws. */
export interface ChargeFailure {
  readonly error: unknown;
}

/**
 * What the answers of a grouped run come to: a failure, or the limit that denies it (-1: admitted);
 * `nothingTaken` when a cached denial denied it before anything was charged.
 */
export interface Outcome {
  readonly failure?: ChargeFailure;
  readonly deniedBy: number;
  readonly nothingTaken?: boolean;
}

const ADMITTED: Outcome = { deniedBy: -1 };

/** The run policy a {@link GroupedCharge} needs (see `RunPolicy`). */
export interface GroupedPolicy {
  /** The longest hold of an admitted request (ms; Infinity: no bound). */
  readonly holdMs: number;
  /** Per limit: true for a dry-run limit; undefined when there is none. */
  readonly dryRun: readonly boolean[] | undefined;
}

/** What a grouped run needs of the engine that runs it (see `Composition`). */
export interface GroupedEngine<R> {
  /** Limit `i` of `run` charged alone, as the engine charges it: a limit outside the grouped calls, or one charged again. */
  chargeAlone(i: number, run: Run): MaybePromise<ChargeAnswer>;
  /** What `run` comes to from its `outcome`: what was taken given back where it must be, then the result (or the failure thrown). */
  concluded(run: Run, outcome: Outcome): MaybePromise<R>;
}

/**
 * How a composition charges its limits when two or more rate limits share a store that decides a
 * request's charges together (`Store.chargeAll`: the Redis store, one script call per request):
 * every limit's cached denial is looked up once, before anything is charged (an enforced one denies
 * the run at once); then every limit's charge goes down its own grouped path (its observers, its guard:
 * circuit, timeout, failure policy) to a {@link ChargeBatch} of its store, instead of the store's own
 * charge; each batch is sent once every limit is issued, so the store decides them in one atomic
 * step, all-or-nothing; the engine then reads the answers in order, as it reads those of charges made
 * one after another, each denial the store gave remembered by its limit's deny cache as it comes. A
 * charge answered at once with an enforced denial (the failure policy) stops the issuing: the later
 * limits are not charged. One request's issuing is a {@link GroupedRequest}: a value per run.
 */
export class GroupedCharge {
  /** The options of every grouped call (`Store.chargeAll`), made once. */
  readonly options: ChargeAllOptions;

  private constructor(
    readonly cores: readonly LimiterCore[],
    /** The stores that group, in the order first met. */
    readonly stores: readonly Store[],
    /** Per limit: the index of its store in {@link stores}, or -1 (a concurrency limit, a store that does not group, a limit with quota leases). */
    readonly groupOf: readonly number[],
    readonly policy: GroupedPolicy,
  ) {
    this.options = { holdMs: policy.holdMs };
  }

  /** The grouping of `cores`, or undefined when no store that groups holds two of its rate limits (then the engine charges one after another). */
  static of(cores: readonly LimiterCore[], policy: GroupedPolicy): GroupedCharge | undefined {
    const stores: Store[] = [];
    const counts: number[] = [];
    const groupOf = cores.map((core) => {
      if (core.isConcurrencyLimit || core.quota !== undefined || typeof core.store.chargeAll !== 'function') return -1;
      let at = stores.indexOf(core.store);
      if (at === -1) at = stores.push(core.store) - 1;
      counts[at] = (counts[at] ?? 0) + 1;
      return at;
    });
    if (!counts.some((count) => count >= 2)) return undefined;
    return new GroupedCharge(cores, stores, groupOf, policy);
  }

  /**
   * Charges every limit of `run` (see the class comment), and concludes it through `engine`: its
   * result, synchronously when every answer was. One lookup per rate limit first: a dry-run limit's
   * cached denial is its answer, given in its turn; the first enforced one denies the run, by that
   * limit, at once and with nothing taken, unless a limit before it records its own denials (a
   * lockout, `countDenied`): then those before it are charged first, as in order they would be (one
   * of them may deny and start its lockout), and what they took is given back.
   */
  charge<R>(run: Run, engine: GroupedEngine<R>): MaybePromise<R> {
    const cores = this.cores;
    let held: (ChargeAnswer | undefined)[] | undefined;
    let recordsBefore = false;
    for (let i = 0; i < cores.length; i++) {
      const charge = run.chargeOf(i);
      const cached = charge === undefined ? undefined : cores[i]!.cachedDenial(charge);
      if (cached === undefined) {
        recordsBefore ||= charge !== undefined && recordsDenials(charge);
        continue;
      }
      if (this.policy.dryRun?.[i] === true) {
        (held ??= [])[i] = cached;
        continue;
      }
      run.answered(i, cached);
      if (recordsBefore) return new GroupedRequest(this, run, engine, { held, issued: i, stoppedBy: cached }).issue();
      cores[i]!.told(charge!, cached);
      return engine.concluded(run, { deniedBy: i, nothingTaken: true });
    }
    return new GroupedRequest(this, run, engine, { held, issued: run.limits, stoppedBy: undefined }).issue();
  }

  /**
   * What the answers in `run` come to. The first enforced denial, in order, denies it (a charge its
   * group never asked is no denial). Admitted, a limit whose group took nothing for it (given back,
   * or never asked: the answer that made the group do so was replaced by that limit's failure policy,
   * a timeout or a fallback) is charged again, alone, as if charged one after another.
   */
  outcome<R>(run: Run, engine: GroupedEngine<R>): MaybePromise<Outcome> {
    const by = this.firstDenial(run);
    if (by !== -1) return { deniedBy: by };
    // Held longer than the run allows: the engine denies it, and what was given back stays so.
    return this.holdExceeded(run) ? ADMITTED : this.recharge(run, engine, this.uncharged(run, 0));
  }

  /** True when an enforced limit's decision in `run` would hold the request longer than `holdMs`. */
  private holdExceeded(run: Run): boolean {
    const decisions = run.decisions;
    for (let i = 0; i < decisions.length; i++) {
      const d = decisions[i];
      if (d !== undefined && d.allowed && this.policy.dryRun?.[i] !== true && d.delayMs > this.policy.holdMs)
        return true;
    }
    return false;
  }

  /** The first limit of `run` whose answer is an enforced denial (a charge its group never asked is none), or -1. */
  firstDenial(run: Run): number {
    for (let i = 0; i < run.limits; i++) {
      const answer = run.answerOf(i);
      if (
        answer !== undefined &&
        !answer.decision.allowed &&
        this.policy.dryRun?.[i] !== true &&
        answer.took !== 'not-asked'
      )
        return i;
    }
    return -1;
  }

  /** Charges, alone and in order, the limits from `i` on whose group took nothing for them. */
  private recharge<R>(run: Run, engine: GroupedEngine<R>, i: number): MaybePromise<Outcome> {
    for (; i !== -1; i = this.uncharged(run, i + 1)) {
      let answer: MaybePromise<ChargeAnswer>;
      try {
        answer = engine.chargeAlone(i, run);
      } catch (error) {
        return { failure: { error }, deniedBy: -1 };
      }
      if (answer instanceof Promise) {
        const at = i;
        return answer.then(
          (a) => (this.denies(run, at, a) ? { deniedBy: at } : this.recharge(run, engine, this.uncharged(run, at + 1))),
          (error: unknown) => ({ failure: { error }, deniedBy: -1 }),
        );
      }
      if (this.denies(run, i, answer)) return { deniedBy: i };
    }
    return ADMITTED;
  }

  /** Puts limit `i`'s `answer` in `run`; true when it is an enforced denial. */
  private denies(run: Run, i: number, answer: ChargeAnswer): boolean {
    run.answered(i, answer);
    return !answer.decision.allowed && this.policy.dryRun?.[i] !== true;
  }

  /** The first limit from `from` on whose group took nothing for it (given back, or never asked; a replay needs nothing: its request was charged when first admitted), or -1. */
  private uncharged(run: Run, from: number): number {
    for (let i = from; i < run.limits; i++) {
      const took = run.answerOf(i)?.took;
      if (took === 'rolled-back' || took === 'not-asked') return i;
    }
    return -1;
  }
}

/**
 * True when a denial of `charge` leaves something behind that a later request meets: a lockout (the
 * limiter's, or one an algorithm chosen per call carries), or a denial its algorithm counts.
 */
function recordsDenials(charge: Charge): boolean {
  return charge.algorithm.blockMs > 0 || charge.algorithm.countDenied;
}

/** What the cached denials of a run said, before its issuing (see {@link GroupedCharge.charge}). */
interface Lookup {
  /** Per limit: a dry-run limit's cached denial, its answer in its turn; undefined when there is none. */
  readonly held: readonly (ChargeAnswer | undefined)[] | undefined;
  /** The limits issued: those before the first enforced cached denial (already in the run), or every one. */
  readonly issued: number;
  /**
   * That cached denial, which stopped the issuing (undefined: none did): its limit's observers are told
   * of it only when it denies the run, as in order it is asked only when no limit before it denies.
   */
  readonly stoppedBy: ChargeAnswer | undefined;
}

/**
 * One run's issuing through a {@link GroupedCharge}: every limit's charge issued in order, those of a
 * grouping store into its batch, each answer put in the run as it comes (a grouped limit's denial
 * remembered by its deny cache first), the batches sent; once every answer is in, the deferred limits
 * asked and the run concluded: synchronously when every answer was, else through one promise for the
 * request. A charge that threw or rejected makes the run's failure (the answers that did come are in
 * the run for the give-back). A dry-run limit the deny cache denies (`held`), and a limit with quota
 * leases (whose blocks are no part of a request's grouped call), are asked only once the others have
 * answered, and only when no enforced limit before it denied: as one charged after them, it is not
 * asked (nor observed) after a denial.
 */
class GroupedRequest<R> {
  /** Answers not in yet. */
  private waiting = 0;
  private failure: ChargeFailure | undefined;
  /** The limits asked once the others have answered (see the class comment); undefined: none. */
  private deferred: number[] | undefined;
  /** The request's promise, made once an answer is awaited. */
  private resolve: ((result: MaybePromise<R>) => void) | undefined;
  private reject: ((error: unknown) => void) | undefined;
  /** A charge rejected: the run's failure is its error, unless one came first. */
  private readonly failed: (error: unknown) => void;

  /** Per limit: a dry-run limit's cached denial (see {@link Lookup}). */
  private readonly held: readonly (ChargeAnswer | undefined)[] | undefined;
  /** The limits issued (see {@link Lookup}). */
  private readonly issued: number;
  /** The cached denial that stopped the issuing (see {@link Lookup}). */
  private readonly stoppedBy: ChargeAnswer | undefined;

  constructor(
    private readonly grouped: GroupedCharge,
    private readonly run: Run,
    private readonly engine: GroupedEngine<R>,
    lookup: Lookup,
  ) {
    this.held = lookup.held;
    this.issued = lookup.issued;
    this.stoppedBy = lookup.stoppedBy;
    this.failed = (error) => {
      this.failure ??= { error };
      this.arrived();
    };
  }

  /** Issues every limit's charge and sends the batches (see the class comment); the run's result. */
  issue(): MaybePromise<R> {
    const { grouped, run } = this;
    const { cores, groupOf, stores } = grouped;
    const batches: ChargeBatch[] = [];
    for (const store of stores) batches.push(new ChargeBatch(store, grouped.options));
    try {
      for (let i = 0; i < this.issued; i++) {
        const core = cores[i]!;
        if (core.quota !== undefined || this.held?.[i] !== undefined) {
          (this.deferred ??= []).push(i);
          continue;
        }
        const at = groupOf[i]!;
        let answer: MaybePromise<ChargeAnswer>;
        try {
          answer = at === -1 ? this.alone(i) : this.inBatch(core, i, batches[at]!);
        } catch (error) {
          this.failure = { error };
          break;
        }
        // A promise is awaited already (see `alone` and `inBatch`).
        if (answer instanceof Promise) continue;
        run.answered(i, answer);
        if (!answer.decision.allowed && grouped.policy.dryRun?.[i] !== true) break;
      }
    } finally {
      // Every batch is sent, whatever one charge threw: the charges in it wait for their answers.
      for (const batch of batches) batch.send();
    }
    if (this.waiting === 0) return this.allIn();
    return new Promise<R>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /**
   * Limit `i`'s charge into `batch`, down its grouped path: its answer, or (a promise) counted as
   * awaited and put in the run when it comes, its denial remembered by the limit's deny cache first,
   * from the time and the cache's generation read before the call (as its stage does for a charge alone).
   */
  private inBatch(core: LimiterCore, i: number, batch: ChargeBatch): MaybePromise<ChargeAnswer> {
    const charge = this.run.chargeOf(i)!;
    const cache = core.denyCache;
    if (cache === undefined) {
      const answer = core.chargeGrouped(charge, batch.add);
      if (answer instanceof Promise) {
        this.waiting++;
        answer.then((a) => this.answered(i, a), this.failed);
      }
      return answer;
    }
    const askedAt = core.localClock();
    const generation = cache.generation;
    const answer = core.chargeGrouped(charge, batch.add);
    if (!(answer instanceof Promise)) {
      cache.answered(charge, answer, askedAt, generation);
      return answer;
    }
    this.waiting++;
    answer.then((a) => {
      cache.answered(charge, a, askedAt, generation);
      this.answered(i, a);
    }, this.failed);
    return answer;
  }

  /** Limit `i` charged alone (outside the grouped calls): its answer, or (a promise) counted as awaited and put in the run when it comes. */
  private alone(i: number): MaybePromise<ChargeAnswer> {
    const answer = this.engine.chargeAlone(i, this.run);
    if (answer instanceof Promise) {
      this.waiting++;
      answer.then((a) => this.answered(i, a), this.failed);
    }
    return answer;
  }

  /** Limit `i`'s awaited answer came. */
  private answered(i: number, answer: ChargeAnswer): void {
    this.run.answered(i, answer);
    this.arrived();
  }

  /** An awaited answer (or failure) came: the last one concludes the run, in the request's promise. */
  private arrived(): void {
    if (--this.waiting !== 0 || this.resolve === undefined) return;
    try {
      this.resolve(this.allIn());
    } catch (error) {
      this.reject!(error);
    }
  }

  /** Every answer issued is in: the deferred limits are asked (unless a charge failed), then the run concluded. */
  private allIn(): MaybePromise<R> {
    if (this.failure !== undefined || this.deferred === undefined) return this.conclude(this.failure);
    const asked = this.askDeferred(0);
    return asked instanceof Promise ? asked.then((failure) => this.conclude(failure)) : this.conclude(asked);
  }

  /** The run concluded: its failure, or what its answers come to (see {@link GroupedCharge.outcome}). */
  private conclude(failure: ChargeFailure | undefined): MaybePromise<R> {
    const { engine, run } = this;
    if (failure !== undefined) return engine.concluded(run, { failure, deniedBy: -1 });
    const outcome = this.grouped.outcome(run, engine);
    return outcome instanceof Promise ? outcome.then((o) => this.concluded(o)) : this.concluded(outcome);
  }

  /** The run concluded with `outcome`; the cached denial that stopped the issuing told to its limit's observers when it is the one that denies. */
  private concluded(outcome: Outcome): MaybePromise<R> {
    const { run, stoppedBy, issued } = this;
    if (stoppedBy !== undefined && outcome.deniedBy === issued)
      this.grouped.cores[issued]!.told(run.chargeOf(issued)!, stoppedBy);
    return this.engine.concluded(run, outcome);
  }

  /** Charges the deferred limits from `deferred[k]` on, in order, up to the first enforced denial before one of them. */
  private askDeferred(k: number): MaybePromise<ChargeFailure | undefined> {
    const { run, deferred } = this;
    for (; k < deferred!.length; k++) {
      const i = deferred![k]!;
      const denier = this.grouped.firstDenial(run);
      if (denier !== -1 && denier < i) return undefined;
      const cached = this.held?.[i];
      if (cached !== undefined) {
        this.grouped.cores[i]!.told(run.chargeOf(i)!, cached);
        run.answered(i, cached);
        continue;
      }
      let answer: MaybePromise<ChargeAnswer>;
      try {
        answer = this.engine.chargeAlone(i, run);
      } catch (error) {
        return { error };
      }
      if (answer instanceof Promise) {
        const next = k + 1;
        return answer.then(
          (a) => {
            run.answered(i, a);
            return this.askDeferred(next);
          },
          (error: unknown) => ({ error }),
        );
      }
      run.answered(i, answer);
    }
    return undefined;
  }
}

/**
 * One request's charges on one grouping store: each added by a limit's guard as its store call
 * (answered by a promise), then sent together in one `Store.chargeAll`, whose answers settle them.
 */
export class ChargeBatch {
  private readonly charges: TimedCharge[] = [];
  private readonly resolves: ((charged: Charged) => void)[] = [];
  private readonly rejects: ((error: unknown) => void)[] = [];
  /** A limit's charge, decided when the batch is sent (the guard's {@link StoreCall}). */
  readonly add: StoreCall;
  /** The executor of each charge's promise: one per batch, not one per charge. */
  private readonly hold: (resolve: (charged: Charged) => void, reject: (error: unknown) => void) => void;

  constructor(
    private readonly store: Store,
    private readonly options: ChargeAllOptions,
  ) {
    this.hold = (resolve, reject) => {
      this.resolves.push(resolve);
      this.rejects.push(reject);
    };
    this.add = (charge, now) => {
      this.charges.push({ charge, now });
      return new Promise(this.hold);
    };
  }

  /** Sends the charges added (none: nothing); a store that throws fails each of them with its error. */
  send(): void {
    const { charges, resolves, rejects } = this;
    if (charges.length === 0) return;
    let answers: readonly Promise<Charged>[];
    try {
      answers = this.store.chargeAll!(charges, this.options);
    } catch (error) {
      for (const reject of rejects) reject(error);
      return this.release();
    }
    for (let i = 0; i < charges.length; i++) {
      const answer = answers[i];
      if (answer === undefined)
        rejects[i]!(new StoreError(`Store.chargeAll answered ${answers.length} of ${charges.length} charges`));
      else answer.then(resolves[i], rejects[i]);
    }
    this.release();
  }

  /**
   * Drops the callbacks once each is handed to its answer. V8 may allocate these arrays in the old
   * generation (allocation-site pretenuring, after a cold start's slow first calls): one that still
   * held them would keep each charge's promise and what it reaches alive through every young
   * collection until a full one (bench/README.md, "The grouped path in the old generation").
   */
  private release(): void {
    this.resolves.length = 0;
    this.rejects.length = 0;
  }
}
