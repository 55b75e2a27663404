import type { Algorithm, ConcurrencyAlgorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { RateLimitError, StoreTimeoutError } from '../errors.js';
import type { MaybePromise, Store } from '../store/interface.js';
import { PROBE_STORE, SKIP_STORE, type Circuit, type FailureReason } from './circuit.js';
import type { Deadlines } from './deadlines.js';
import { ACQUIRE, CONSUME, PEEK, type FailurePolicy, type StoreOp } from './failure-policy.js';
import type { LeaseDecision, StoreErrorEvent } from './options.js';

/** Hears of each failed or timed-out store call (the limiter's `'storeError'` event). */
export type FailureReport = (error: unknown, storeKey: string, action: StoreErrorEvent['action']) => void;

/** A store call whose failure is only reported (nothing is decided from it). */
const UNDO = 0;
const RELEASE = 1;
type QuietOp = typeof UNDO | typeof RELEASE;

/**
 * One limiter's store behind its circuit, its timeout and its failure policy: every store call of
 * the limiter's verbs goes through {@link GuardedStore.call} (decisions) or a quiet call (undo,
 * release: a failure is reported, never thrown). Keys here are storage keys (prefix included).
 */
export class GuardedStore {
  constructor(
    private readonly store: Store,
    private readonly algorithm: Algorithm,
    /** The user's clock, or undefined to let the store's own clock decide. */
    private readonly clock: Clock | undefined,
    private readonly circuit: Circuit,
    /** Undefined without a timeout. */
    private readonly deadlines: Deadlines | undefined,
    private readonly policy: FailurePolicy,
    private readonly report: FailureReport,
  ) {}

  /**
   * The decision of the store for `op`, or the failure policy's when the circuit is open or the call
   * fails or times out; a synchronous store answers synchronously. `after` is applied to the decision
   * of a store that answers asynchronously (policy decisions included), in the same step that settles
   * the call; a synchronous answer is returned as it is. `leaseId` is for {@link ACQUIRE} only. Throws
   * the misuse errors of the store (a closed store).
   */
  call(storeKey: string, cost: number, op: StoreOp, leaseId: string, after?: (decision: Decision) => Decision): MaybePromise<Decision> {
    const circuit = this.circuit;
    const gate = circuit.gate();
    if (gate === SKIP_STORE) return this.policy.decide(storeKey, cost, op, circuit.reason);
    const now = this.clock === undefined ? undefined : this.clock();
    let result: MaybePromise<Decision>;
    try {
      result =
        op === CONSUME
          ? this.store.consume(storeKey, this.algorithm, cost, now)
          : op === PEEK
            ? this.store.peek(storeKey, this.algorithm, cost, now)
            : this.store.acquire(storeKey, this.algorithm as ConcurrencyAlgorithm, leaseId, now);
    } catch (error) {
      return this.threw(error, storeKey, cost, op);
    }
    if (!(result instanceof Promise)) {
      if (gate === PROBE_STORE) circuit.probeSucceeded();
      return result;
    }
    return this.settle(result, gate === PROBE_STORE, storeKey, cost, op, leaseId, after);
  }

  /** A store call threw synchronously: misuse errors (bad input, a closed store) propagate; store failures get the policy. */
  threw(error: unknown, storeKey: string, cost: number, op: StoreOp): MaybePromise<Decision> {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR') throw error;
    return this.failed(error, storeKey, cost, op, 'store-error');
  }

  /** `decision` of an acquire with its `release()`: the store's own permit, the fallback's (which releases itself), or none. */
  lease(decision: Decision, storeKey: string, leaseId: string): LeaseDecision {
    if (decision.reason === 'fallback') return decision as LeaseDecision;
    if (!decision.allowed || decision.reason !== undefined) return { ...decision, release: releaseNothing };
    let released = false;
    const release = async (): Promise<void> => {
      if (released) return;
      released = true;
      await this.quietCall(storeKey, RELEASE, 0, leaseId);
    };
    return { ...decision, release };
  }

  /** Gives back `cost` units with the timeout; never throws (a failure is reported). */
  undo(storeKey: string, cost: number): MaybePromise<void> {
    return this.quietCall(storeKey, UNDO, cost, '');
  }

  /**
   * The answer of an asynchronous store call with the timeout and the failure policy, and `after`
   * applied to the final decision: one promise per call (on top of the store's), whatever happens. A
   * permit the store grants after its acquire timed out is given back.
   */
  private settle(
    result: Promise<Decision>,
    probe: boolean,
    storeKey: string,
    cost: number,
    op: StoreOp,
    leaseId: string,
    after: ((decision: Decision) => Decision) | undefined,
  ): Promise<Decision> {
    const answered = (decision: Decision): Decision => {
      if (probe) this.circuit.probeSucceeded();
      return after === undefined ? decision : after(decision);
    };
    const failed = (error: unknown): MaybePromise<Decision> => {
      const decision = this.failed(error, storeKey, cost, op, error instanceof StoreTimeoutError ? 'timeout' : 'store-error');
      if (after === undefined) return decision;
      return decision instanceof Promise ? decision.then(after) : after(decision);
    };
    const deadlines = this.deadlines;
    if (deadlines === undefined) return result.then(answered, failed);
    if (op !== ACQUIRE) return deadlines.race(result, answered, failed);
    const giveBack = (late: Decision): MaybePromise<void> => (late.allowed ? this.store.release(storeKey, this.algorithm as ConcurrencyAlgorithm, leaseId) : undefined);
    return deadlines.race(result, answered, failed, giveBack);
  }

  /** A store call failed or timed out: the circuit counts it, the limiter reports it, the policy decides. */
  private failed(error: unknown, storeKey: string, cost: number, op: StoreOp, reason: FailureReason): MaybePromise<Decision> {
    this.circuit.failed(reason);
    this.report(error, storeKey, this.policy.action);
    return this.policy.decide(storeKey, cost, op, reason);
  }

  /** Undo or release with the timeout; a failure is reported (the units or the lease expire by themselves). Never throws. */
  private quietCall(storeKey: string, op: QuietOp, cost: number, leaseId: string): MaybePromise<void> {
    let result: MaybePromise<void>;
    try {
      result =
        op === UNDO
          ? this.store.undo(storeKey, this.algorithm, cost, this.clock?.())
          : this.store.release(storeKey, this.algorithm as ConcurrencyAlgorithm, leaseId);
    } catch (error) {
      return this.report(error, storeKey, 'deny');
    }
    if (!(result instanceof Promise)) return;
    // A lost give-back errs on the safe side: the quota stays used until it recovers.
    const lost = (error: unknown): void => this.report(error, storeKey, 'deny');
    return this.deadlines === undefined ? result.then(ignore, lost) : this.deadlines.race(result, ignore, lost);
  }
}

function releaseNothing(): Promise<void> {
  return Promise.resolve();
}

function ignore(): void {}
