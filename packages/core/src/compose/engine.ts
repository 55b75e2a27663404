import type { Algorithm } from '../algorithm.js';
import { reportsQuota } from '../decision.js';
import { requireCapability } from '../limiter/capabilities.js';
import type { ChargeAnswer } from '../limiter/charge-path.js';
import type { LimiterCore } from '../limiter/core.js';
import { coreOf } from '../limiter/core-registry.js';
import type { LeaseDecision, Limiter } from '../limiter/index.js';
import type { MaybePromise } from '../store/interface.js';
import { GroupedCharge, type GroupedEngine, type Outcome } from './grouped-charge.js';
import { algorithmIn, type Run } from './run.js';

/**
 * Builds what a caller of the engine returns from one finished run of `composition` (a combined
 * decision, an HTTP result, which may give back later through it); called once per run, after any
 * give-back has finished.
 */
export type ResultOf<R> = (run: Run, composition: Composition<R>) => R;

/** The policy of every run of a composition, set once. */
export interface RunPolicy {
  /**
   * The longest delay an admitted request may be held (ms): finite and above 0, the rate limits
   * reserve within it (their stores must run reservations: `UnsupportedError` otherwise);
   * `Infinity` (the default) for no bound and 0 for no hold (a shaper's delay then denies), both consuming.
   */
  readonly maxDelayMs?: number;
  /** Per limit: true for a dry-run limit (charged, its denial never enforced). Default: none. */
  readonly dryRun?: readonly boolean[];
  /** True when a run may carry idempotent charges (`Run.idempotency`): no run then takes the one-limit shortcut. */
  readonly idempotent?: boolean;
}

/** What {@link Composition.giveBack} gives back. */
export const EVERYTHING = 0;
export const PERMITS = 1;
export const UNITS = 2;
export type GiveBack = typeof EVERYTHING | typeof PERMITS | typeof UNITS;

/**
 * The composition engine: the one place that applies several limits to one request, gives back what
 * they took, and picks the limit whose numbers are reported. `LimiterGroup` and the HTTP layer both
 * run through it.
 *
 * Limits are charged in order, through each limiter's core (its one charge path), with the keys and
 * costs the caller has already checked and put in the {@link Run}: a rate limit
 * consumes its cost, a concurrency limit takes a permit. The first denial stops the run, and what the
 * earlier limits took is given back (units by undo, permits by release; a decision of the failure
 * policy took nothing from the store, so it gives back nothing), so a denial uses no quota in the
 * others. Between the charge and the give-back another request may briefly see that quota as used:
 * composition can wrongly deny, never wrongly admit; except where a store decides a request's limits
 * together ({@link GroupedCharge}: all-or-nothing in one step). A limiter that throws gets the same give-back,
 * then the error propagates. When every limit admits but the longest delay exceeds `maxDelayMs`, the
 * request is denied by the limit that delays it, and everything is given back.
 *
 * The binding limit is the denying one; when all admit, the one with the fewest `remaining` among
 * those whose store answered (`reportsQuota`): a limit that failed open binds only when all did.
 *
 * A dry-run limit is charged like any other, but its denial does not stop the run: the other limits
 * are charged as if it had admitted (its own denial took nothing), its delay is not held, and it binds
 * only when every limit is a dry-run one. The outcome says which dry-run limit would have denied.
 *
 * With a finite `maxDelayMs` (the HTTP layer's `wait`) every rate limit reserves instead of consuming
 * (a charge with a `maxDelayMs`, the smaller of the run's and its algorithm's horizon): each gets a slot
 * at most that far ahead or denies at once, taking nothing; the request waits for the latest slot. A
 * give-back of everything (a denial by a later limit, a client that left, a throw) is then each
 * reservation's cancel (the core's `cancel`: its units at its slot, as far as later reservations allow,
 * and the observers' `reservationCancelled`); a give-back of units for the response's outcome is a
 * plain give-back at the charge's slot.
 *
 * A run is synchronous (no promise, no microtask) while every limiter answers synchronously (local
 * stores); from the first that answers with a promise on, it continues asynchronously.
 */
export class Composition<R> {
  /** The limiters, in the order they are charged. */
  readonly limiters: readonly Limiter[];
  /** Their cores: the one charge path of each (see `LimiterCore`). */
  readonly cores: readonly LimiterCore[];
  /** True when a limit is a concurrency limit: its permits are held until {@link giveBack} with `PERMITS`. */
  readonly hasLeases: boolean;
  /** Per limit: true for a concurrency limit. */
  private readonly leases: readonly boolean[];
  /** The core when there is exactly one limit and it is a rate limit, not a dry-run one. */
  private readonly single: LimiterCore | undefined;
  /** Per limit: true for a dry-run limit; undefined when there is none. */
  private readonly dryRun: readonly boolean[] | undefined;
  /** True when some limit is enforced (not dry-run): dry-run limits then never bind. */
  private readonly anyEnforced: boolean;
  /** The longest hold of an admitted request (see {@link RunPolicy.maxDelayMs}). */
  private readonly maxDelayMs: number;
  /** True when the rate limits reserve (a finite `maxDelayMs` above 0). */
  private readonly reserves: boolean;
  /** How the limits are charged together, when a store decides several of them in one step; undefined: one after another. */
  private readonly grouped: GroupedCharge | undefined;
  /** What {@link grouped} needs of this engine, made once. */
  private readonly groupedEngine: GroupedEngine<R>;

  /** `resultOf` builds what each run returns; `policy` applies to every run. */
  constructor(
    limiters: readonly Limiter[],
    private readonly resultOf: ResultOf<R>,
    policy: RunPolicy = {},
  ) {
    this.limiters = limiters;
    this.cores = limiters.map((limiter) => coreOf(limiter)!);
    this.leases = this.cores.map((core) => core.isConcurrencyLimit);
    this.hasLeases = this.leases.includes(true);
    const dryRun = policy.dryRun ?? [];
    this.dryRun = dryRun.includes(true) ? limiters.map((_, i) => dryRun[i] === true) : undefined;
    this.anyEnforced = this.dryRun === undefined || this.dryRun.includes(false);
    this.maxDelayMs = policy.maxDelayMs ?? Infinity;
    this.reserves = this.maxDelayMs > 0 && Number.isFinite(this.maxDelayMs);
    this.single =
      this.cores.length === 1 &&
      !this.hasLeases &&
      this.dryRun === undefined &&
      !this.reserves &&
      policy.idempotent !== true
        ? this.cores[0]
        : undefined;
    this.grouped = GroupedCharge.of(this.cores, { holdMs: this.maxDelayMs, dryRun: this.dryRun });
    this.groupedEngine = { chargeAlone: this.chargeOne, concluded: (run, outcome) => this.concluded(run, outcome) };
    // Every rate limit reserves its units for the request to wait for.
    if (this.reserves)
      for (const core of this.cores)
        if (!core.isConcurrencyLimit) requireCapability(core.store, 'reservations', 'wait');
  }

  isConcurrencyLimit = (i: number): boolean => this.leases[i]!;

  /** Runs every limit for one request, whose keys, costs and algorithms `run` holds (checked by the caller), and fills in its outcome. */
  run(run: Run): MaybePromise<R> {
    this.plan(run);
    const single = this.single;
    if (single === undefined) return this.grouped === undefined ? this.charge(0, run) : this.chargeGrouped(run);
    // One rate limit that consumes, the common case: no loop, and nothing to give back if the limiter throws.
    const answer = single.charge(run.chargeOf(0)!);
    if (answer instanceof Promise) return answer.then((a) => this.answered(0, a, run));
    run.answered(0, answer);
    return answer.decision.allowed ? this.admitted(run) : this.denied(0, run);
  }

  /** The charge of each rate limit of `run`: its storage key (with its parts), algorithm and cost, a reservation's `maxDelayMs` when the limits reserve, its idempotency, whether it is enforced. */
  private plan(run: Run): void {
    const cores = this.cores;
    for (let i = 0; i < cores.length; i++) {
      if (this.leases[i]) continue;
      const core = cores[i]!;
      const algorithm = algorithmIn(run, i, core.algorithm);
      const local = run.keys[i]!;
      const enforced = this.dryRun?.[i] === true ? false : undefined;
      // The fields in `LimiterCore.chargeOf`'s order: every charge has one shape.
      run.setCharge(i, {
        key: core.storeKeyOf(local),
        scope: core.keyPrefix,
        local,
        algorithm,
        cost: run.costs[i]!,
        maxDelayMs: this.maxDelayOf(algorithm),
        idempotency: run.idempotency?.[i],
        enforced,
      });
    }
  }

  /**
   * Gives back what the admitted limits of `run` took: `what` says which, permits (release), units
   * (undo) or both. Returns a promise that resolves once every give-back has, or `undefined` when all
   * of them were synchronous (done already).
   */
  giveBack(run: Run, what: GiveBack = EVERYTHING): Promise<void> | undefined {
    let pending: Promise<void> | Promise<void>[] | undefined;
    // Everything given back before the request is served: the reservations are cancelled.
    const cancels = this.reserves && what === EVERYTHING;
    for (let i = 0; i < run.limits; i++) {
      const answer = run.answerOf(i);
      if (answer === undefined || !answer.decision.allowed) continue;
      const took = answer.took;
      // A charge its group gave back (or never asked), or a replay, took nothing; a reservation's cancel is still told.
      if (
        (took === 'rolled-back' || took === 'not-asked' || took === 'replayed') &&
        (!cancels || this.leases[i] || took === 'not-asked')
      )
        continue;
      let back: MaybePromise<void>;
      if (this.leases[i]) {
        if (what === UNITS) continue;
        back = (answer.decision as LeaseDecision).release();
      } else if (what === PERMITS) continue;
      else if (answer.decision.reason === undefined) {
        const core = this.cores[i]!;
        // A delayed charge (a reservation, a shaper's consume) goes back to its slot.
        const charge = run.chargeOf(i)!;
        back = cancels ? core.cancel(charge, answer) : core.giveBack(charge, answer);
      } else {
        // Admitted by the failure policy: nothing was taken, but a timed-out call may still be granted late.
        answer.unserved?.();
        continue;
      }
      if (!(back instanceof Promise)) continue;
      if (pending === undefined) pending = back;
      else if (Array.isArray(pending)) pending.push(back);
      else pending = [pending, back];
    }
    return Array.isArray(pending) ? Promise.all(pending).then(() => undefined) : pending;
  }

  /** Limit `i`'s charge: a permit, or its rate charge (a reservation within `maxDelayMs` and its algorithm's horizon, or a consume). */
  private readonly chargeOne = (i: number, run: Run): MaybePromise<ChargeAnswer> => {
    const core = this.cores[i]!;
    if (!this.leases[i]) return core.charge(run.chargeOf(i)!);
    const permit = core.acquire(run.keys[i]!);
    return permit instanceof Promise ? permit.then(asAnswer) : asAnswer(permit);
  };

  /** The `maxDelayMs` of a rate limit's charge: the run's, within the algorithm's horizon, when the limits reserve; undefined: a consume. */
  private readonly maxDelayOf = (algorithm: Algorithm): number | undefined =>
    this.reserves ? Math.min(this.maxDelayMs, algorithm.maxReserveMs) : undefined;

  /** Charges limits `start..` in order. */
  private charge(start: number, run: Run): MaybePromise<R> {
    const cores = this.cores;
    for (let i = start; i < cores.length; i++) {
      let answer: MaybePromise<ChargeAnswer>;
      try {
        answer = this.chargeOne(i, run);
      } catch (error) {
        return this.failed(error, run);
      }
      if (answer instanceof Promise) {
        return answer.then(
          (a) => this.answered(i, a, run),
          (error: unknown) => this.failed(error, run),
        );
      }
      run.answered(i, answer);
      if (!answer.decision.allowed && this.dryRun?.[i] !== true) return this.denied(i, run);
    }
    return this.admitted(run);
  }

  /** Charges every limit at once, a store deciding those it holds together in one step ({@link GroupedCharge}); the first enforced denial, in order, denies the run. */
  private chargeGrouped(run: Run): MaybePromise<R> {
    return this.grouped!.charge(run, this.groupedEngine);
  }

  /** What a grouped run came to: a failure (what was taken is given back, the error thrown), a denial (the later limits' answers dropped: never the request's), or an admission. */
  private concluded(run: Run, { failure, deniedBy, nothingTaken }: Outcome): MaybePromise<R> {
    if (failure !== undefined) return this.failed(failure.error, run);
    if (deniedBy === -1) return this.admitted(run);
    if (nothingTaken === true) return this.denied(deniedBy, run);
    return this.deny(run, deniedBy, run.decisions[deniedBy]!.retryAfterMs, false, true);
  }

  /** Limit `i` answered asynchronously: go on with the next one. */
  private answered(i: number, answer: ChargeAnswer, run: Run): MaybePromise<R> {
    run.answered(i, answer);
    if (!answer.decision.allowed && this.dryRun?.[i] !== true) return this.denied(i, run);
    return this.charge(i + 1, run);
  }

  /** Denies `run` without charging any limit (the HTTP layer's `deny`): its decisions are given, each a ban's denial; the first limit binds. */
  readonly refuse = (run: Run, retryAfterMs: number): MaybePromise<R> => this.deny(run, 0, retryAfterMs, true);

  /** Limit `i` denied: what the limits before it took is given back, and it binds. */
  private denied(i: number, run: Run): MaybePromise<R> {
    return this.deny(run, i, run.decisions[i]!.retryAfterMs, i === 0);
  }

  /**
   * Every enforced limit admitted. A dry-run limit neither delays the request nor binds it (unless
   * every limit is a dry-run one); the first that denied, or would have held it longer than
   * `maxDelayMs`, is reported.
   */
  private admitted(run: Run): MaybePromise<R> {
    const dryRun = this.dryRun;
    const decisions = run.decisions;
    let binding = -1;
    let delayMs = 0;
    let delayedBy = -1;
    for (let i = 0; i < decisions.length; i++) {
      const d = decisions[i]!;
      if (dryRun !== undefined && dryRun[i]) {
        if (run.dryRunDeniedBy === -1 && (!d.allowed || d.delayMs > this.maxDelayMs)) {
          run.dryRunDeniedBy = i;
          run.retryAfterMs = d.allowed ? d.delayMs - this.maxDelayMs : d.retryAfterMs;
        }
        if (this.anyEnforced) continue;
      } else if (d.delayMs > delayMs) {
        delayMs = d.delayMs;
        delayedBy = i;
      }
      const b = binding === -1 ? undefined : decisions[binding]!;
      if (b === undefined || (d.remaining < b.remaining && reportsQuota(d)) || !reportsQuota(b)) binding = i;
    }
    // The wait is longer than the request may be held: deny it now, and give its slot back.
    if (delayMs > this.maxDelayMs) return this.deny(run, delayedBy, delayMs - this.maxDelayMs, false);
    run.binding = binding;
    run.delayMs = delayMs;
    return this.resultOf(run, this);
  }

  /** Denies the run by limit `by` (retry in `retryAfterMs`) once what was taken is given back (`nothingTaken`: nothing was; `dropLater`: later limits' answers are then dropped). */
  private deny(run: Run, by: number, retryAfterMs: number, nothingTaken: boolean, dropLater = false): MaybePromise<R> {
    run.deniedBy = by;
    run.binding = by;
    run.retryAfterMs = retryAfterMs;
    run.dryRunDeniedBy = -1;
    const back = nothingTaken ? undefined : this.giveBack(run);
    const result = (): R => {
      if (dropLater) run.dropAfter(by);
      return this.resultOf(run, this);
    };
    return back === undefined ? result() : back.then(result);
  }

  /** A limiter threw: give back what the earlier ones took, then let the error propagate. */
  private failed(error: unknown, run: Run): never | Promise<never> {
    const back = this.giveBack(run);
    if (back === undefined) throw error;
    return back.then(() => {
      throw error;
    });
  }
}

/** A permit's decision as the answer of its charge. */
function asAnswer(decision: LeaseDecision): ChargeAnswer {
  return { decision, took: 'charged' };
}
