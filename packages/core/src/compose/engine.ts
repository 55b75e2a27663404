import { reportsQuota, type Decision } from '../decision.js';
import type { LeaseDecision, Limiter } from '../limiter/index.js';
import type { MaybePromise } from '../store/interface.js';

/**
 * Builds what a caller of the engine returns from the outcome of one run (a combined decision, an
 * HTTP result). Called once per run, after any give-back has finished.
 *
 * - `decisions`: each limit's decision in order; `undefined` for limits not asked after a denial.
 * - `deniedBy`: the index of the limit that denied (or whose delay exceeded `maxDelayMs`), -1 when admitted.
 * - `binding`: the index of the limit whose numbers the outcome reports (see {@link Composition}).
 * - `retryAfterMs`: 0 when admitted; the denial's `retryAfterMs`, or how much longer than
 *   `maxDelayMs` the request would have had to wait.
 * - `delayMs`: the longest delay of the limits when admitted; 0 when denied.
 */
export type Settle<R> = (
  keys: readonly string[],
  costs: readonly number[],
  decisions: readonly (Decision | undefined)[],
  deniedBy: number,
  binding: number,
  retryAfterMs: number,
  delayMs: number,
) => R;

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
  /** The limiter when there is exactly one and it is a rate limit. */
  private readonly single: Limiter | undefined;

  /**
   * @param settle builds the outcome of each run.
   * @param maxDelayMs the longest delay an admitted request may be held (ms); `Infinity` for no bound.
   */
  constructor(
    limiters: readonly Limiter[],
    private readonly settle: Settle<R>,
    private readonly maxDelayMs = Infinity,
  ) {
    this.limiters = limiters;
    this.leases = limiters.map((limiter) => limiter.algorithm.stateKind === 'leases');
    this.hasLeases = this.leases.includes(true);
    this.single = limiters.length === 1 && !this.hasLeases ? limiters[0] : undefined;
  }

  /** Runs every limit for one request: `keys[i]` and `costs[i]` are limit i's checked key and cost. */
  run(keys: readonly string[], costs: readonly number[]): MaybePromise<R> {
    if (this.single === undefined) return this.charge(0, keys, costs, new Array<Decision | undefined>(this.limiters.length));
    // One rate limit, the common case: no loop, and nothing to give back if the limiter throws.
    const decisions: (Decision | undefined)[] = [undefined];
    const answer = this.single.consumeChecked(keys[0]!, costs[0]!);
    if (answer instanceof Promise) return answer.then((decision) => this.answered(0, decision, keys, costs, decisions));
    decisions[0] = answer;
    return answer.allowed ? this.admitted(keys, costs, decisions) : this.settle(keys, costs, decisions, 0, 0, answer.retryAfterMs, 0);
  }

  /**
   * Gives back what the admitted limits of one run took: permits (release) and, unless
   * `permitsOnly`, units (undo). Returns a promise that resolves once every give-back has, or
   * `undefined` when all of them were synchronous (done already).
   */
  giveBack(keys: readonly string[], costs: readonly number[], decisions: readonly (Decision | undefined)[], permitsOnly = false): Promise<void> | undefined {
    let pending: Promise<void> | Promise<void>[] | undefined;
    for (let i = 0; i < decisions.length; i++) {
      const decision = decisions[i];
      if (decision === undefined || !decision.allowed) continue;
      let back: MaybePromise<void>;
      if (this.leases[i]) back = (decision as LeaseDecision).release();
      else if (permitsOnly) continue;
      else if (decision.reason === undefined) back = this.limiters[i]!.undoChecked(keys[i]!, costs[i]!, decision.at);
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
  private charge(start: number, keys: readonly string[], costs: readonly number[], decisions: (Decision | undefined)[]): MaybePromise<R> {
    const limiters = this.limiters;
    for (let i = start; i < limiters.length; i++) {
      let answer: MaybePromise<Decision>;
      try {
        answer = this.leases[i] ? limiters[i]!.acquireChecked(keys[i]!) : limiters[i]!.consumeChecked(keys[i]!, costs[i]!);
      } catch (error) {
        return this.failed(error, keys, costs, decisions);
      }
      if (answer instanceof Promise) {
        return answer.then(
          (decision) => this.answered(i, decision, keys, costs, decisions),
          (error: unknown) => this.failed(error, keys, costs, decisions),
        );
      }
      decisions[i] = answer;
      if (!answer.allowed) return this.denied(i, keys, costs, decisions);
    }
    return this.admitted(keys, costs, decisions);
  }

  /** Limit `i` answered asynchronously: go on with the next one. */
  private answered(i: number, decision: Decision, keys: readonly string[], costs: readonly number[], decisions: (Decision | undefined)[]): MaybePromise<R> {
    decisions[i] = decision;
    if (!decision.allowed) return this.denied(i, keys, costs, decisions);
    return this.charge(i + 1, keys, costs, decisions);
  }

  private denied(i: number, keys: readonly string[], costs: readonly number[], decisions: (Decision | undefined)[]): MaybePromise<R> {
    const retryAfterMs = decisions[i]!.retryAfterMs;
    // Only limits before the denying one can have taken something.
    const back = i === 0 ? undefined : this.giveBack(keys, costs, decisions);
    if (back === undefined) return this.settle(keys, costs, decisions, i, i, retryAfterMs, 0);
    return back.then(() => this.settle(keys, costs, decisions, i, i, retryAfterMs, 0));
  }

  private admitted(keys: readonly string[], costs: readonly number[], decisions: (Decision | undefined)[]): MaybePromise<R> {
    let binding = 0;
    let delayMs = 0;
    let delayedBy = -1;
    for (let i = 0; i < decisions.length; i++) {
      const d = decisions[i]!;
      if (d.delayMs > delayMs) {
        delayMs = d.delayMs;
        delayedBy = i;
      }
      if (i === 0) continue;
      const b = decisions[binding]!;
      if ((d.remaining < b.remaining && reportsQuota(d)) || !reportsQuota(b)) binding = i;
    }
    if (delayMs <= this.maxDelayMs) return this.settle(keys, costs, decisions, -1, binding, 0, delayMs);
    // The wait is longer than the request may be held: deny it now, and give its slot back.
    const retryAfterMs = delayMs - this.maxDelayMs;
    const back = this.giveBack(keys, costs, decisions);
    if (back === undefined) return this.settle(keys, costs, decisions, delayedBy, delayedBy, retryAfterMs, 0);
    return back.then(() => this.settle(keys, costs, decisions, delayedBy, delayedBy, retryAfterMs, 0));
  }

  /** A limiter threw: give back what the earlier ones took, then let the error propagate. */
  private failed(error: unknown, keys: readonly string[], costs: readonly number[], decisions: (Decision | undefined)[]): never | Promise<never> {
    const back = this.giveBack(keys, costs, decisions);
    if (back === undefined) throw error;
    return back.then(() => {
      throw error;
    });
  }
}

function nothing(): void {}
