import type { Algorithm, ConcurrencyAlgorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { RateLimitError, StoreError, StoreTimeoutError } from '../errors.js';
import type { MaybePromise, Store } from '../store/interface.js';
import { PROBE_STORE, SKIP_STORE, type Circuit, type Circuits, type FailureReason } from './circuit.js';
import type { Deadlines } from './deadlines.js';
import { ACQUIRE, CONSUME, PEEK, RESERVE, type FailurePolicy, type StoreOp } from './failure-policy.js';
import type { LeaseDecision, StoreErrorEvent } from './options.js';

/** Hears of each failed or timed-out store call (the limiter's `'storeError'` event). */
export type FailureReport = (error: unknown, storeKey: string, action: StoreErrorEvent['action']) => void;

/** A store call whose failure is only reported (nothing is decided from it). */
const UNDO = 0;
const RELEASE = 1;
type QuietOp = typeof UNDO | typeof RELEASE;

/** How a call that went to the store was answered: in time, or by the policy (the request served or not). */
const IN_TIME = 0;
const SERVED = 1;
const NOT_SERVED = 2;
/** The policy is still deciding (an asynchronous fallback): a late grant waits for its answer. */
const DECIDING = 3;
type Outcome = typeof IN_TIME | typeof SERVED | typeof NOT_SERVED | typeof DECIDING;

/**
 * One limiter's store behind its circuit, its timeout and its failure policy: every store call of
 * the limiter's verbs goes through {@link GuardedStore.call} (decisions), {@link GuardedStore.reset}
 * (a failure is reported, then thrown) or a quiet call (undo, release: a failure is reported, never
 * thrown). Every one of them has the timeout. Keys here are storage keys (prefix included).
 */
export class GuardedStore {
  /** The store answers through I/O: a decision taken without it must still let I/O run (see {@link call}). */
  private readonly remote: boolean;
  /**
   * Admitting decisions of the failure policy after a consume timed out, each with what to do when its
   * request turns out not to be served after all (a later limit of a composition denied it, or its
   * client left): the store's late grant, if any, is then given back. Filled only on that path.
   */
  private readonly servedAfterTimeout = new WeakMap<Decision, () => void>();

  constructor(
    private readonly store: Store,
    /** The user's clock, or undefined to let the store's own clock decide. */
    private readonly clock: Clock | undefined,
    /** The circuit of a store without failure domains. */
    private readonly circuit: Circuit,
    /** The circuits of a store with failure domains (then `circuit` is unused); undefined otherwise. */
    private readonly circuits: Circuits | undefined,
    /** Undefined without a timeout. */
    private readonly deadlines: Deadlines | undefined,
    private readonly policy: FailurePolicy,
    private readonly report: FailureReport,
  ) {
    this.remote = !store.capabilities.local;
  }

  /**
   * The decision of the store for `op` under `algorithm` (the limiter's, or the call's own), or the failure policy's when the circuit is open or the call
   * fails or times out; a synchronous store answers synchronously. `after` is applied to the decision
   * of a store that answers asynchronously (policy decisions included), in the same step that settles
   * the call; a synchronous answer is returned as it is. `leaseId` is for {@link ACQUIRE} only,
   * `maxDelayMs` for {@link RESERVE} only (a store that declares `capabilities.reservations`). Throws
   * the misuse errors of the store (a closed store), and the limiter clock's error for a time that is
   * not finite (before the store is called).
   *
   * While the circuit is open, the policy decides without the store; for a remote store that decision
   * resolves after a macrotask (`setImmediate`), as the store's answer would have come through I/O: a
   * loop of `await limiter.consume()` would otherwise run on microtasks alone and starve the I/O that
   * the circuit's own probe needs to close. A local store's decisions never wait for I/O, so they stay
   * synchronous.
   */
  call(storeKey: string, algorithm: Algorithm, cost: number, op: StoreOp, leaseId: string, after?: (decision: Decision) => Decision, maxDelayMs = 0): MaybePromise<Decision> {
    const circuit = this.circuits === undefined ? this.circuit : this.circuitOf(storeKey, algorithm);
    const gate = circuit.gate();
    if (gate === SKIP_STORE) {
      const decision = this.policy.decide(storeKey, algorithm, cost, op, circuit.reason);
      return this.remote && !(decision instanceof Promise) ? afterIo(decision) : decision;
    }
    const now = this.clock === undefined ? undefined : this.clock();
    let result: MaybePromise<Decision>;
    try {
      result =
        op === CONSUME
          ? this.store.consume(storeKey, algorithm, cost, now)
          : op === PEEK
            ? this.store.peek(storeKey, algorithm, cost, now)
            : op === RESERVE
              ? this.store.reserve!(storeKey, algorithm, cost, maxDelayMs, now)
              : this.store.acquire(storeKey, algorithm as ConcurrencyAlgorithm, leaseId, now);
    } catch (error) {
      return this.threwIn(circuit, error, storeKey, algorithm, cost, op, gate === PROBE_STORE);
    }
    if (!(result instanceof Promise)) {
      if (gate === PROBE_STORE) circuit.probeSucceeded();
      return result;
    }
    return this.settle(result, circuit, gate === PROBE_STORE, storeKey, algorithm, cost, op, leaseId, after);
  }

  /** A store call threw synchronously: misuse errors (bad input, a closed store) propagate; store failures get the policy. */
  threw(error: unknown, storeKey: string, algorithm: Algorithm, cost: number, op: StoreOp): MaybePromise<Decision> {
    return this.threwIn(this.circuits === undefined ? this.circuit : this.circuitOf(storeKey, algorithm), error, storeKey, algorithm, cost, op);
  }

  /** `decision` of an acquire with its `release()`: the store's own permit, the fallback's (which releases itself), or none. */
  lease(decision: Decision, storeKey: string, algorithm: Algorithm, leaseId: string): LeaseDecision {
    if (decision.reason === 'fallback') return decision as LeaseDecision;
    if (!decision.allowed || decision.reason !== undefined) return { ...decision, release: releaseNothing };
    let released = false;
    const release = async (): Promise<void> => {
      if (released) return;
      released = true;
      await this.quietCall(storeKey, algorithm, RELEASE, 0, leaseId);
    };
    return { ...decision, release };
  }

  /**
   * Forgets a key's state, with the timeout. A store failure or a timeout is reported (a
   * `'storeError'` event, action `'deny'`: the key keeps its state, so its limit still applies), then
   * thrown as a `StoreError` (the store's own when it is one) or the `StoreTimeoutError`: the caller
   * knows the key was not reset. A reset that timed out may still apply when the store answers late.
   * Misuse errors (a closed store) are thrown without a report, as for decisions.
   */
  reset(storeKey: string, algorithm: Algorithm): MaybePromise<void> {
    let result: MaybePromise<void>;
    try {
      result = this.store.reset(storeKey, algorithm);
    } catch (error) {
      throw this.resetFailed(error, storeKey);
    }
    if (!(result instanceof Promise)) return;
    const failed = (error: unknown): never => {
      throw this.resetFailed(error, storeKey);
    };
    return this.deadlines === undefined ? result.then(ignore, failed) : this.deadlines.race(result, ignore, failed);
  }

  /** Gives back `cost` units charged at `chargedAt` (see `Store.undo`) with the timeout; never throws (a failure is reported). */
  undo(storeKey: string, algorithm: Algorithm, cost: number, chargedAt?: number, delayMs?: number): MaybePromise<void> {
    return this.quietCall(storeKey, algorithm, UNDO, cost, '', chargedAt, delayMs);
  }

  /**
   * The answer of an asynchronous store call with the timeout and the failure policy, and `after`
   * applied to the final decision: one promise per call (on top of the store's), whatever happens.
   * What the store grants after the call timed out is given back: a permit always (nobody holds it),
   * the units of a consume when the request was answered denied (it was not served, so it must not
   * count); a request the policy admitted was served, and its units stay charged.
   */
  private settle(
    result: Promise<Decision>,
    circuit: Circuit,
    probe: boolean,
    storeKey: string,
    algorithm: Algorithm,
    cost: number,
    op: StoreOp,
    leaseId: string,
    after: ((decision: Decision) => Decision) | undefined,
  ): Promise<Decision> {
    // How the call was answered, for a late answer (the deadline race hands it to `answered` again).
    let outcome: Outcome = IN_TIME;
    /** A consume the store admitted late while the policy was still deciding: given back if the policy denies. */
    let grantedWhileDeciding = false;
    /** A consume the store admitted late and kept, because the policy had admitted its request. */
    let grantedAndKept = false;
    /** The time of a late grant (its `at`): a give-back of it goes to the window it was charged in; and its delay (a reservation's slot). */
    let grantedAt: number | undefined;
    let grantedDelay = 0;
    const charges = op === CONSUME || op === RESERVE;
    const answered = (decision: Decision): Decision => {
      if (outcome !== IN_TIME) {
        if (!decision.allowed) return decision;
        grantedAt = decision.at;
        grantedDelay = decision.delayMs;
        if (outcome === DECIDING && charges) grantedWhileDeciding = true;
        else if (outcome === SERVED && charges) grantedAndKept = true;
        else this.grantedLate(outcome, storeKey, algorithm, cost, op, leaseId, grantedAt, grantedDelay);
        return decision;
      }
      if (probe) circuit.probeSucceeded();
      return after === undefined ? decision : after(decision);
    };
    /** The request of an admitting policy decision was not served after all: give back a late grant, now or when it comes. */
    const notServed = (): void => {
      if (outcome !== SERVED) return;
      outcome = NOT_SERVED;
      if (grantedAndKept) this.grantedLate(NOT_SERVED, storeKey, algorithm, cost, op, leaseId, grantedAt, grantedDelay);
    };
    const failed = (error: unknown): MaybePromise<Decision> => {
      // A late grant is kept until the policy has answered the request denied.
      outcome = SERVED;
      const timedOut = error instanceof StoreTimeoutError;
      const decision = this.failed(circuit, error, storeKey, algorithm, cost, op, timedOut ? 'timeout' : 'store-error', probe);
      if (decision instanceof Promise) {
        outcome = DECIDING;
        const decided = (served: boolean): void => {
          outcome = served ? SERVED : NOT_SERVED;
          if (!grantedWhileDeciding) return;
          if (served) grantedAndKept = true;
          else this.grantedLate(NOT_SERVED, storeKey, algorithm, cost, op, leaseId, grantedAt, grantedDelay);
        };
        return decision.then(
          (d) => {
            decided(d.allowed);
            if (d.allowed && timedOut && charges) this.servedAfterTimeout.set(d, notServed);
            return after === undefined ? d : after(d);
          },
          (policyError: unknown) => {
            decided(false);
            throw policyError;
          },
        );
      }
      if (!decision.allowed) outcome = NOT_SERVED;
      else if (timedOut && charges) this.servedAfterTimeout.set(decision, notServed);
      return after === undefined ? decision : after(decision);
    };
    const deadlines = this.deadlines;
    if (deadlines === undefined) return result.then(answered, failed);
    return deadlines.race(result, answered, failed, op === PEEK ? undefined : answered);
  }

  /**
   * The request of `decision`, an admitting decision of the failure policy after a consume timed out,
   * was not served after all (a later limit denied it, or its client left): what the store grants
   * late for it is given back. Any other decision: nothing to do.
   */
  notServed(decision: Decision): void {
    this.servedAfterTimeout.get(decision)?.();
  }

  /** The store granted a call that had already timed out (answered as `outcome`), at `grantedAt`: give back what nobody will use. */
  private grantedLate(outcome: Outcome, storeKey: string, algorithm: Algorithm, cost: number, op: StoreOp, leaseId: string, grantedAt: number | undefined, grantedDelay: number): void {
    if (op === ACQUIRE) {
      // A lost release is dropped: the permit then expires with its lease.
      const released = this.store.release(storeKey, algorithm as ConcurrencyAlgorithm, leaseId);
      if (released instanceof Promise) released.catch(ignore);
    } else if ((op === CONSUME || op === RESERVE) && outcome === NOT_SERVED) {
      void this.quietCall(storeKey, algorithm, UNDO, cost, '', grantedAt, grantedDelay);
    }
  }

  /** The circuit of `storeKey`'s failure domain. */
  private circuitOf(storeKey: string, algorithm: Algorithm): Circuit {
    return this.circuits!.of(this.store.failureDomain!(storeKey, algorithm));
  }

  private threwIn(circuit: Circuit, error: unknown, storeKey: string, algorithm: Algorithm, cost: number, op: StoreOp, probe = false): MaybePromise<Decision> {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR') throw error;
    return this.failed(circuit, error, storeKey, algorithm, cost, op, 'store-error', probe);
  }

  /**
   * A store call failed or timed out: its circuit counts it, the limiter reports it, the policy decides.
   * A failure of the key's state alone (`StoreError.keyOnly`) is not the store's: the circuit does not
   * count it, and a probe that met one found the store answering.
   */
  private failed(circuit: Circuit, error: unknown, storeKey: string, algorithm: Algorithm, cost: number, op: StoreOp, reason: FailureReason, probe: boolean): MaybePromise<Decision> {
    if ((error as Partial<StoreError> | null)?.keyOnly !== true) circuit.failed(reason);
    else if (probe) circuit.probeSucceeded();
    this.report(error, storeKey, this.policy.action);
    return this.policy.decide(storeKey, algorithm, cost, op, reason);
  }

  /** The error a failed reset is thrown with, reported first unless it is a misuse error. */
  private resetFailed(error: unknown, storeKey: string): unknown {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR' && error.code !== 'RL_STORE_TIMEOUT') return error;
    const failure = error instanceof RateLimitError ? error : new StoreError(`The store failed to reset the key: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    this.report(failure, storeKey, 'deny');
    return failure;
  }

  /** Undo or release with the timeout; a failure is reported (the units or the lease expire by themselves). Never throws. */
  private quietCall(storeKey: string, algorithm: Algorithm, op: QuietOp, cost: number, leaseId: string, chargedAt?: number, delayMs?: number): MaybePromise<void> {
    let result: MaybePromise<void>;
    try {
      result =
        op === UNDO
          ? delayMs !== undefined && delayMs > 0
            ? this.store.undo(storeKey, algorithm, cost, this.clock?.(), chargedAt, delayMs)
            : this.store.undo(storeKey, algorithm, cost, this.clock?.(), chargedAt)
          : this.store.release(storeKey, algorithm as ConcurrencyAlgorithm, leaseId);
    } catch (error) {
      return this.report(error, storeKey, 'deny');
    }
    if (!(result instanceof Promise)) return;
    // A lost give-back errs on the safe side: the quota stays used until it recovers.
    const lost = (error: unknown): void => this.report(error, storeKey, 'deny');
    return this.deadlines === undefined ? result.then(ignore, lost) : this.deadlines.race(result, ignore, lost);
  }
}

/** `decision`, resolved after a macrotask: the I/O that is waiting runs first. */
function afterIo(decision: Decision): Promise<Decision> {
  return new Promise((resolve) => setImmediate(resolve, decision));
}

function releaseNothing(): Promise<void> {
  return Promise.resolve();
}

function ignore(): void {}
