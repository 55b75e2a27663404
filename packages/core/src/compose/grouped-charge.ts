import { StoreError } from '../errors.js';
import type { LimiterCore } from '../limiter/core.js';
import type { ChargeAnswer, StoreCall } from '../limiter/charge-path.js';
import type { Charge, Charged, MaybePromise, Store, TimedCharge } from '../store/interface.js';
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

/** How a limit that is not part of a store's grouped call is charged: alone, as the engine charges it. */
export type ChargeAlone = (i: number) => MaybePromise<ChargeAnswer>;

/**
 * How a composition charges its limits when two or more rate limits share a store that decides a
 * request's charges together (`Store.chargeAll`: the Redis store, one script call per request):
 * every limit's cached denial is looked up once, before anything is charged (an enforced one denies
 * the run at once); then every limit's charge goes down its own charge path (its observers, its guard:
 * circuit, timeout, failure policy) to a {@link ChargeBatch} of its store, instead of the store's own
 * charge; each batch is sent once every limit is issued, so the store decides them in one atomic
 * step, all-or-nothing; the engine then reads the answers in order, as it reads those of charges made
 * one after another. A charge answered at once with an enforced denial (the failure policy) stops the
 * issuing: the later limits are not charged.
 */
export class GroupedCharge {
  private constructor(
    private readonly cores: readonly LimiterCore[],
    /** The stores that group, in the order first met. */
    private readonly stores: readonly Store[],
    /** Per limit: the index of its store in {@link stores}, or -1 (a concurrency limit, a store that does not group, a limit with quota leases). */
    private readonly groupOf: readonly number[],
    private readonly policy: GroupedPolicy,
  ) {}

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

  /** Charges every limit of `run` (see the class comment); `alone` charges a limit outside the grouped calls. */
  charge(run: Run, alone: ChargeAlone): MaybePromise<Outcome> {
    // One lookup per rate limit: an enforced cached denial denies the run; a dry-run one is its answer, given in its turn.
    const held: (ChargeAnswer | undefined)[] = [];
    for (let i = 0; i < this.cores.length; i++) {
      const charge = run.charges[i];
      const cached = charge === undefined ? undefined : this.cores[i]!.cachedDenial(charge);
      if (cached === undefined) continue;
      if (this.policy.dryRun?.[i] === true) {
        held[i] = cached;
        continue;
      }
      this.cores[i]!.told(charge!, cached);
      run.answered(i, cached);
      return { deniedBy: i, nothingTaken: true };
    }
    const issued = this.issue(run, alone, held);
    const outcome = (failure: ChargeFailure | undefined): MaybePromise<Outcome> =>
      failure !== undefined ? { failure, deniedBy: -1 } : this.outcome(run, alone);
    return issued instanceof Promise ? issued.then(outcome) : outcome(issued);
  }

  /**
   * What the answers in `run` come to. The first enforced denial, in order, denies it (a charge its
   * group never asked is no denial). Admitted, a limit whose group took nothing for it (given back,
   * or never asked: the answer that made the group do so was replaced by that limit's failure policy,
   * a timeout or a fallback) is charged again, alone, as if charged one after another.
   */
  private outcome(run: Run, alone: ChargeAlone): MaybePromise<Outcome> {
    const by = this.firstDenial(run);
    if (by !== -1) return { deniedBy: by };
    // Held longer than the run allows: the engine denies it, and what was given back stays so.
    return this.holdExceeded(run) ? ADMITTED : this.recharge(run, alone, this.uncharged(run, 0));
  }

  /** True when an enforced limit's decision in `run` would hold the request longer than `holdMs`. */
  private holdExceeded(run: Run): boolean {
    return run.decisions.some(
      (d, i) => d !== undefined && d.allowed && this.policy.dryRun?.[i] !== true && d.delayMs > this.policy.holdMs,
    );
  }

  /** The first limit of `run` whose answer is an enforced denial (a charge its group never asked is none), or -1. */
  private firstDenial(run: Run): number {
    const answers = run.answers;
    for (let i = 0; i < answers.length; i++) {
      const answer = answers[i];
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
  private recharge(run: Run, alone: ChargeAlone, i: number): MaybePromise<Outcome> {
    for (; i !== -1; i = this.uncharged(run, i + 1)) {
      let answer: MaybePromise<ChargeAnswer>;
      try {
        answer = alone(i);
      } catch (error) {
        return { failure: { error }, deniedBy: -1 };
      }
      if (answer instanceof Promise) {
        const at = i;
        return answer.then(
          (a) => (this.denies(run, at, a) ? { deniedBy: at } : this.recharge(run, alone, this.uncharged(run, at + 1))),
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
    const answers = run.answers;
    for (let i = from; i < answers.length; i++) {
      const took = answers[i]?.took;
      if (took === 'rolled-back' || took === 'not-asked') return i;
    }
    return -1;
  }

  /**
   * Issues every limit's charge, in order, those of a grouping store into its batch, and puts each
   * answer in `run` as it comes; sends the batches; resolves (or returns, when every answer was
   * synchronous) once all are in, with the first failure if a charge threw or rejected (the answers
   * that did come are in `run` for the give-back). A dry-run limit the deny cache denies (`held`), and
   * a limit with quota leases (whose blocks are no part of a request's grouped call), are asked only
   * once the others have answered, and only when no enforced limit before it denied: as one charged
   * after them, it is not asked (nor observed) after a denial.
   */
  private issue(
    run: Run,
    alone: ChargeAlone,
    held: readonly (ChargeAnswer | undefined)[],
  ): MaybePromise<ChargeFailure | undefined> {
    const batches = this.stores.map((store) => new ChargeBatch(store, this.policy.holdMs));
    let waiting = 0;
    let allIn: (() => void) | undefined;
    const deferred: number[] = [];
    let failure: ChargeFailure | undefined;
    // One promise for every answer (no Promise.all and its per-element functions).
    const answered = (): void => {
      if (--waiting === 0 && allIn !== undefined) allIn();
    };
    try {
      for (let i = 0; i < run.answers.length; i++) {
        const at = this.groupOf[i]!;
        if (this.cores[i]!.quota !== undefined || held[i] !== undefined) {
          deferred.push(i);
          continue;
        }
        let answer: MaybePromise<ChargeAnswer>;
        try {
          answer = at === -1 ? alone(i) : this.cores[i]!.chargeGrouped(run.charges[i]!, batches[at]!.add);
        } catch (error) {
          failure = { error };
          break;
        }
        if (answer instanceof Promise) {
          waiting++;
          answer.then(
            (a) => {
              run.answered(i, a);
              answered();
            },
            (error: unknown) => {
              failure ??= { error };
              answered();
            },
          );
          continue;
        }
        run.answered(i, answer);
        if (!answer.decision.allowed && this.policy.dryRun?.[i] !== true) break;
      }
    } finally {
      // Every batch is sent, whatever one charge threw: the charges in it wait for their answers.
      for (const batch of batches) batch.send();
    }
    const rest = (): MaybePromise<ChargeFailure | undefined> =>
      failure ?? this.askDeferred(run, deferred, { k: 0, alone, held });
    if (waiting === 0) return rest();
    return new Promise<void>((resolve) => (allIn = resolve)).then(rest);
  }

  /** Charges the deferred limits from `deferred[at.k]` on, in order, up to the first enforced denial before one of them. */
  private askDeferred(run: Run, deferred: readonly number[], at: DeferredAt): MaybePromise<ChargeFailure | undefined> {
    for (let k = at.k; k < deferred.length; k++) {
      const i = deferred[k]!;
      const denier = this.firstDenial(run);
      if (denier !== -1 && denier < i) return undefined;
      const cached = at.held[i];
      if (cached !== undefined) {
        this.cores[i]!.told(run.charges[i]!, cached);
        run.answered(i, cached);
        continue;
      }
      let answer: MaybePromise<ChargeAnswer>;
      try {
        answer = at.alone(i);
      } catch (error) {
        return { error };
      }
      if (answer instanceof Promise) {
        const next: DeferredAt = { ...at, k: k + 1 };
        return answer.then(
          (a) => {
            run.answered(i, a);
            return this.askDeferred(run, deferred, next);
          },
          (error: unknown) => ({ error }),
        );
      }
      run.answered(i, answer);
    }
    return undefined;
  }
}

/** Where {@link GroupedCharge.askDeferred} goes on from. */
interface DeferredAt {
  readonly k: number;
  readonly alone: ChargeAlone;
  readonly held: readonly (ChargeAnswer | undefined)[];
}

/**
 * One request's charges on one grouping store: each added by a limit's guard as its store call
 * (answered by a promise), then sent together in one `Store.chargeAll`, whose answers settle them.
 */
export class ChargeBatch {
  private readonly charges: TimedCharge[] = [];
  private readonly waiting: { resolve: (charged: Charged) => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly store: Store,
    private readonly holdMs: number,
  ) {}

  /** A limit's charge, decided when the batch is sent (the guard's {@link StoreCall}). */
  readonly add: StoreCall = (charge: Charge, now: number | undefined): Promise<Charged> =>
    new Promise((resolve, reject) => {
      this.charges.push({ charge, now });
      this.waiting.push({ resolve, reject });
    });

  /** Sends the charges added (none: nothing); a store that throws fails each of them with its error. */
  send(): void {
    const charges = this.charges;
    if (charges.length === 0) return;
    const waiting = this.waiting;
    let answers: readonly Promise<Charged>[];
    try {
      answers = this.store.chargeAll!(charges, { holdMs: this.holdMs });
    } catch (error) {
      for (const w of waiting) w.reject(error);
      return;
    }
    for (let i = 0; i < waiting.length; i++) {
      const w = waiting[i]!;
      const answer = answers[i];
      if (answer === undefined)
        w.reject(new StoreError(`Store.chargeAll answered ${answers.length} of ${charges.length} charges`));
      else answer.then(w.resolve, w.reject);
    }
  }
}
