import type { Algorithm } from '../algorithm.js';
import { reportsQuota, type Decision } from '../decision.js';
import { UnsupportedError } from '../errors.js';
import type { LeaseDecision, Limiter } from '../limiter/index.js';
import type { MaybePromise } from '../store/interface.js';

/**
 * Builds what a caller of the engine returns from the outcome of one run (a combined decision, an
 * HTTP result). Called once per run, after any give-back has finished.
 *
 * - `algorithms`: each limit's algorithm for this run when some limit was given one (a limit chosen
 *   per request; `undefined` entries: the limiter's own), or `undefined` when none was.
 * - `decisions`: each limit's decision in order; `undefined` for limits not asked after a denial.
 * - `deniedBy`: the index of the limit that denied (or whose delay exceeded `maxDelayMs`), -1 when admitted.
 * - `binding`: the index of the limit whose numbers the outcome reports (see {@link Composition}).
 * - `retryAfterMs`: 0 when admitted; the denial's `retryAfterMs`, or how much longer than
 *   `maxDelayMs` the request would have had to wait.
 * - `delayMs`: the longest delay of the limits when admitted; 0 when denied.
 * - `dryRunDeniedBy`: when the request was admitted, the first dry-run limit that denied it (or
 *   whose delay exceeded `maxDelayMs`), whose denial was not enforced; -1 otherwise. `retryAfterMs`
 *   is then that denial's.
 */
export type Settle<R> = (
  keys: readonly string[],
  costs: readonly number[],
  algorithms: Algorithms,
  decisions: readonly (Decision | undefined)[],
  deniedBy: number,
  binding: number,
  retryAfterMs: number,
  delayMs: number,
  dryRunDeniedBy: number,
) => R;

/** What {@link Composition.giveBack} gives back. */
export const EVERYTHING = 0;
export const PERMITS = 1;
export const UNITS = 2;
export type GiveBack = typeof EVERYTHING | typeof PERMITS | typeof UNITS;

/** Per limit, the algorithm of one run (undefined: the limiter's own); undefined when every limit runs its own. */
export type Algorithms = readonly (Algorithm | undefined)[] | undefined;

/**
 * The composition engine: the one place that applies several limits to one request, gives back what
 * they took, and picks the limit whose numbers are reported. `LimiterGroup` and the HTTP layer both
 * run through it.
 *
 * Limits are charged in order with keys and costs the caller has already checked: a rate limit
 * consumes its cost, a concurrency limit takes a permit. The first denial stops the run, and what the
 * earlier limits took is given back (units by undo, permits by release; a decision of the failure
 * policy took nothing from the store, so it gives back nothing), so a denial uses no quota in the
 * others. Between the charge and the give-back another request may briefly see that quota as used:
 * composition can wrongly deny, never wrongly admit. A limiter that throws gets the same give-back,
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
 * (`reserveChecked`, within the smaller of `maxDelayMs` and its algorithm's horizon): each gets a slot
 * at most that far ahead or denies at once, taking nothing; the request waits for the latest slot. A
 * give-back of everything (a denial by a later limit, a client that left, a throw) is then each
 * reservation's cancel (`cancelChecked`: its units at its slot, as far as later reservations allow,
 * and the observers' `reservationCancelled`); a give-back of units for the response's outcome is a
 * plain give-back at the charge's slot.
 *
 * A run is synchronous (no promise, no microtask) as long as every limiter answers synchronously
 * (local stores such as the memory store); from the first limiter that answers with a promise on, it
 * continues asynchronously and returns a promise.
 */
export class Composition<R> {
  /** The limiters, in the order they are charged. */
  readonly limiters: readonly Limiter[];
  /** True when a limit is a concurrency limit: its permits are held until {@link giveBack} with `permitsOnly`. */
  readonly hasLeases: boolean;
  /** Per limit: true for a concurrency limit. */
  private readonly leases: readonly boolean[];
  /** The limiter when there is exactly one and it is a rate limit, not a dry-run one. */
  private readonly single: Limiter | undefined;
  /** Per limit: true for a dry-run limit; undefined when there is none. */
  private readonly dryRun: readonly boolean[] | undefined;
  /** True when some limit is enforced (not dry-run): dry-run limits then never bind. */
  private readonly anyEnforced: boolean;
  /** True when the rate limits reserve (a finite `maxDelayMs` above 0). */
  private readonly reserves: boolean;

  /**
   * @param settle builds the outcome of each run.
   * @param maxDelayMs the longest delay an admitted request may be held (ms): finite and above 0, the
   * rate limits reserve within it (their stores must run reservations: `UnsupportedError` otherwise);
   * `Infinity` for no bound and 0 for no hold (a shaper's delay then denies), both consuming.
   */
  constructor(
    limiters: readonly Limiter[],
    private readonly settle: Settle<R>,
    private readonly maxDelayMs = Infinity,
    dryRun: readonly boolean[] = [],
  ) {
    this.limiters = limiters;
    this.leases = limiters.map((limiter) => limiter.leases);
    this.hasLeases = this.leases.includes(true);
    this.dryRun = dryRun.includes(true) ? limiters.map((_, i) => dryRun[i] === true) : undefined;
    this.anyEnforced = this.dryRun === undefined || this.dryRun.includes(false);
    this.single = limiters.length === 1 && !this.hasLeases && this.dryRun === undefined ? limiters[0] : undefined;
    this.reserves = maxDelayMs > 0 && Number.isFinite(maxDelayMs);
    if (this.reserves) {
      for (const limiter of limiters) {
        if (!limiter.leases && limiter.store.capabilities.reservations !== true) {
          throw new UnsupportedError('wait needs a store that runs reservations (capabilities.reservations), such as MemoryStore or RedisStore: every rate limit reserves its units for the request to wait for.');
        }
      }
    }
  }

  /** Limit `i`'s charge: a reservation within `maxDelayMs` and its algorithm's horizon, or a consume. */
  private chargeOne(i: number, key: string, cost: number, algorithm: Algorithm | undefined): MaybePromise<Decision> {
    const limiter = this.limiters[i]!;
    if (this.leases[i]) return limiter.acquireChecked(key);
    if (!this.reserves) return limiter.consumeChecked(key, cost, algorithm);
    const a = algorithm ?? limiter.algorithm!;
    return limiter.reserveChecked(key, cost, a, Math.min(this.maxDelayMs, a.maxReserveMs));
  }

  /**
   * Runs every limit for one request: `keys[i]` and `costs[i]` are limit i's checked key and cost,
   * `algorithms?.[i]` its algorithm for this request when it has one (checked by the limiter's
   * `checkCallAlgorithm`, the cost against it).
   */
  run(keys: readonly string[], costs: readonly number[], algorithms?: Algorithms): MaybePromise<R> {
    if (this.single === undefined) return this.charge(0, keys, costs, algorithms, new Array<Decision | undefined>(this.limiters.length));
    // One rate limit, the common case: no loop, and nothing to give back if the limiter throws.
    const decisions: (Decision | undefined)[] = [undefined];
    const answer = this.reserves ? this.chargeOne(0, keys[0]!, costs[0]!, algorithms?.[0]) : this.single.consumeChecked(keys[0]!, costs[0]!, algorithms?.[0]);
    if (answer instanceof Promise) return answer.then((decision) => this.answered(0, decision, keys, costs, algorithms, decisions));
    decisions[0] = answer;
    return answer.allowed ? this.admitted(keys, costs, algorithms, decisions) : this.settle(keys, costs, algorithms, decisions, 0, 0, answer.retryAfterMs, 0, -1);
  }

  /**
   * Gives back what the admitted limits of one run took: `what` says which, permits (release), units
   * (undo) or both. Returns a promise that resolves once every give-back has, or `undefined` when all
   * of them were synchronous (done already).
   */
  giveBack(keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: readonly (Decision | undefined)[], what: GiveBack = EVERYTHING): Promise<void> | undefined {
    let pending: Promise<void> | Promise<void>[] | undefined;
    // Everything given back before the request is served: the reservations are cancelled.
    const cancels = this.reserves && what === EVERYTHING;
    for (let i = 0; i < decisions.length; i++) {
      const decision = decisions[i];
      if (decision === undefined || !decision.allowed) continue;
      let back: MaybePromise<void>;
      if (this.leases[i]) {
        if (what === UNITS) continue;
        back = (decision as LeaseDecision).release();
      } else if (what === PERMITS) continue;
      else if (decision.reason === undefined) {
        const limiter = this.limiters[i]!;
        // A delayed charge (a reservation, a shaper's consume) goes back to its slot.
        if (cancels) back = limiter.cancelChecked(keys[i]!, costs[i]!, algorithms?.[i] ?? limiter.algorithm!, decision);
        else back = limiter.undoChecked(keys[i]!, costs[i]!, algorithms?.[i], decision.at, decision.delayMs > 0 ? decision.delayMs : undefined);
      }
      else {
        // Admitted by the failure policy: nothing was taken, but a timed-out call may still be granted late.
        this.limiters[i]!.notServed(decision);
        continue;
      }
      if (!(back instanceof Promise)) continue;
      if (pending === undefined) pending = back;
      else if (Array.isArray(pending)) pending.push(back);
      else pending = [pending, back];
    }
    return Array.isArray(pending) ? Promise.all(pending).then(nothing) : pending;
  }

  /** Charges limits `start..` in order. */
  private charge(start: number, keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: (Decision | undefined)[]): MaybePromise<R> {
    const limiters = this.limiters;
    for (let i = start; i < limiters.length; i++) {
      let answer: MaybePromise<Decision>;
      try {
        answer = this.chargeOne(i, keys[i]!, costs[i]!, algorithms?.[i]);
      } catch (error) {
        return this.failed(error, keys, costs, algorithms, decisions);
      }
      if (answer instanceof Promise) {
        return answer.then(
          (decision) => this.answered(i, decision, keys, costs, algorithms, decisions),
          (error: unknown) => this.failed(error, keys, costs, algorithms, decisions),
        );
      }
      decisions[i] = answer;
      if (!answer.allowed && this.dryRun?.[i] !== true) return this.denied(i, keys, costs, algorithms, decisions);
    }
    return this.admitted(keys, costs, algorithms, decisions);
  }

  /** Limit `i` answered asynchronously: go on with the next one. */
  private answered(i: number, decision: Decision, keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: (Decision | undefined)[]): MaybePromise<R> {
    decisions[i] = decision;
    if (!decision.allowed && this.dryRun?.[i] !== true) return this.denied(i, keys, costs, algorithms, decisions);
    return this.charge(i + 1, keys, costs, algorithms, decisions);
  }

  private denied(i: number, keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: (Decision | undefined)[]): MaybePromise<R> {
    const retryAfterMs = decisions[i]!.retryAfterMs;
    // Only limits before the denying one can have taken something.
    const back = i === 0 ? undefined : this.giveBack(keys, costs, algorithms, decisions);
    if (back === undefined) return this.settle(keys, costs, algorithms, decisions, i, i, retryAfterMs, 0, -1);
    return back.then(() => this.settle(keys, costs, algorithms, decisions, i, i, retryAfterMs, 0, -1));
  }

  /**
   * Every enforced limit admitted. A dry-run limit neither delays the request nor binds it (unless
   * every limit is a dry-run one); the first that denied, or would have held it longer than
   * `maxDelayMs`, is reported.
   */
  private admitted(keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: (Decision | undefined)[]): MaybePromise<R> {
    const dryRun = this.dryRun;
    let binding = -1;
    let delayMs = 0;
    let delayedBy = -1;
    let dryRunDeniedBy = -1;
    let dryRunRetryMs = 0;
    for (let i = 0; i < decisions.length; i++) {
      const d = decisions[i]!;
      if (dryRun !== undefined && dryRun[i]) {
        if (dryRunDeniedBy === -1 && (!d.allowed || d.delayMs > this.maxDelayMs)) {
          dryRunDeniedBy = i;
          dryRunRetryMs = d.allowed ? d.delayMs - this.maxDelayMs : d.retryAfterMs;
        }
        if (this.anyEnforced) continue;
      } else if (d.delayMs > delayMs) {
        delayMs = d.delayMs;
        delayedBy = i;
      }
      const b = binding === -1 ? undefined : decisions[binding]!;
      if (b === undefined || (d.remaining < b.remaining && reportsQuota(d)) || !reportsQuota(b)) binding = i;
    }
    if (delayMs > this.maxDelayMs) return this.delayedTooLong(keys, costs, algorithms, decisions, delayedBy, delayMs);
    return this.settle(keys, costs, algorithms, decisions, -1, binding, dryRunRetryMs, delayMs, dryRunDeniedBy);
  }

  /** The wait is longer than the request may be held: deny it now, and give its slot back. */
  private delayedTooLong(keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: (Decision | undefined)[], delayedBy: number, delayMs: number): MaybePromise<R> {
    const retryAfterMs = delayMs - this.maxDelayMs;
    const back = this.giveBack(keys, costs, algorithms, decisions);
    if (back === undefined) return this.settle(keys, costs, algorithms, decisions, delayedBy, delayedBy, retryAfterMs, 0, -1);
    return back.then(() => this.settle(keys, costs, algorithms, decisions, delayedBy, delayedBy, retryAfterMs, 0, -1));
  }

  /** A limiter threw: give back what the earlier ones took, then let the error propagate. */
  private failed(error: unknown, keys: readonly string[], costs: readonly number[], algorithms: Algorithms, decisions: (Decision | undefined)[]): never | Promise<never> {
    const back = this.giveBack(keys, costs, algorithms, decisions);
    if (back === undefined) throw error;
    return back.then(() => {
      throw error;
    });
  }
}

function nothing(): void {}
