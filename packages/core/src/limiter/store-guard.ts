import { afterIo as afterPendingIo } from '../runtime.js';
import type { Algorithm, ConcurrencyAlgorithm, Settlement } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { RateLimitError, StoreError } from '../errors.js';
import type { IdempotentCharge, MaybePromise, Store } from '../store/interface.js';
import { PROBE_STORE, SKIP_STORE, type Circuit, type Circuits, type FailureReason } from './circuit.js';
import type { Deadlines } from './deadlines.js';
import type { StoreErrorEvent } from './events.js';
import { ACQUIRE, BLOCK, CHARGE, charges, PEEK, type FailurePolicy, type StoreOp } from './failure-policy.js';
import { PendingCall, type CallGuard, type StoreRequest } from './late-grant.js';
import { releaseNothing, type LeaseDecision } from './lease.js';

/**
 * The least time an operator's call (a reset, a ban, an override) is given before it times out, in ms:
 * the limiter's `timeout` is a request's budget, and a control may wait for more than one round trip
 * (the Redis store's confirmations from every instance). A call not done by then is a timeout, never
 * a hang (a client that queues commands while Redis is down would hold it forever).
 */
export const CONTROL_TIMEOUT_FLOOR_MS = 1000;

/** Hears of each failed or timed-out store call (the limiter's `'storeError'` event). */
export type FailureReport = (error: unknown, storeKey: string, action: StoreErrorEvent['action']) => void;

/** The guard's circuits: the one of a store that is one domain, or one per failure domain. */
export interface GuardCircuits {
  /** The circuit of a store without failure domains. */
  readonly circuit: Circuit;
  /** The circuits of a store with failure domains (then `circuit` is unused); undefined otherwise. */
  readonly byDomain: Circuits | undefined;
}

/**
 * The guard of one limiter's store calls: the circuit's gate (per failure domain), the timeout, the
 * failure policy, and what a late answer leaves behind ({@link PendingCall}). Every decision of the
 * limiter goes through {@link charge}, {@link peek} or {@link acquire}; {@link reset} reports a
 * failure, then throws it; the quiet calls (undo, release) report a failure and never throw. Every one
 * of them has the timeout. Keys here are storage keys (prefix included).
 */
export class StoreGuard implements CallGuard {
  /** The store answers through I/O: a decision taken without it must still let I/O run (see {@link charge}). */
  private readonly remote: boolean;
  private readonly circuit: Circuit;
  private readonly circuits: Circuits | undefined;
  /**
   * Admitting decisions of the failure policy after a charge timed out, each with what to do when its
   * request turns out not to be served after all (a later limit of a composition denied it, or its
   * client left): the store's late grant, if any, is then given back. Filled only on that path.
   */
  private readonly notServedAfterTimeout = new WeakMap<Decision, () => void>();
  /** The timeouts of operators' calls: the limiter's, at least {@link CONTROL_TIMEOUT_FLOOR_MS}; undefined without a timeout. */
  private readonly controlDeadlines: Deadlines | undefined;

  constructor(
    private readonly store: Store,
    /** The user's clock, or undefined to let the store's own clock decide. */
    private readonly clock: Clock | undefined,
    circuits: GuardCircuits,
    /** Undefined without a timeout. */
    private readonly deadlines: Deadlines | undefined,
    private readonly policy: FailurePolicy,
    private readonly report: FailureReport,
  ) {
    this.remote = !store.capabilities.local;
    this.circuit = circuits.circuit;
    this.circuits = circuits.byDomain;
    this.controlDeadlines = deadlines?.atLeast(CONTROL_TIMEOUT_FLOOR_MS);
  }

  /**
   * The store's decision for a charge of `cost` under `algorithm` (a consume; with `maxDelayMs`, a
   * reservation), or the failure policy's when the circuit is open or the call fails or times out; a
   * synchronous store answers synchronously. `after` is applied to the decision of a store that
   * answers asynchronously (policy decisions included), in the same step that settles the call; a
   * synchronous answer is returned as it is. Throws the misuse errors of the store (a closed store),
   * and the limiter clock's error for a time that is not finite (before the store is called).
   *
   * While the circuit is open, the policy decides without the store; for a remote store that decision
   * resolves after a macrotask (`setImmediate`), as the store's answer would have come through I/O: a
   * loop of `await limiter.consume()` would otherwise run on microtasks alone and starve the I/O that
   * the circuit's own probe needs to close. A local store's decisions never wait for I/O, so they stay
   * synchronous.
   */
  charge(
    storeKey: string,
    algorithm: Algorithm,
    cost: number,
    maxDelayMs: number | undefined,
    after?: (decision: Decision) => Decision,
    op: typeof CHARGE | typeof BLOCK = CHARGE,
    idempotency?: IdempotentCharge,
  ): MaybePromise<Decision> {
    return this.call(op, storeKey, algorithm, cost, maxDelayMs, after, idempotency);
  }

  /** The failure policy's decision of a charge of `cost` the store could not answer for `reason` (a request whose lease block failed: one failure, one policy decision). */
  decideWithoutStore(storeKey: string, algorithm: Algorithm, cost: number, reason: FailureReason): MaybePromise<Decision> {
    return this.policy.decide(storeKey, algorithm, cost, CHARGE, reason);
  }

  /** As {@link charge} for a peek (nothing recorded). */
  peek(storeKey: string, algorithm: Algorithm, cost: number): MaybePromise<Decision> {
    return this.call(PEEK, storeKey, algorithm, cost, undefined, undefined);
  }

  /** As {@link charge} for a permit of a concurrency limit, named `leaseId`. */
  acquire(storeKey: string, algorithm: ConcurrencyAlgorithm, leaseId: string): MaybePromise<Decision> {
    return this.call(ACQUIRE, storeKey, algorithm, 1, leaseId, undefined);
  }

  /** A charge that threw synchronously (the limiter's fast path called the store itself): misuse errors propagate; store failures get the policy. */
  threw(error: unknown, storeKey: string, algorithm: Algorithm, cost: number): MaybePromise<Decision> {
    return this.threwIn(this.circuitOf(storeKey, algorithm), error, { op: CHARGE, storeKey, algorithm, cost, leaseId: '' });
  }

  /** `decision` of an acquire with its `release()`: the store's own permit, the fallback's (which releases itself), or none. */
  lease(decision: Decision, storeKey: string, algorithm: Algorithm, leaseId: string): LeaseDecision {
    if (decision.reason === 'fallback') return decision as LeaseDecision;
    if (!decision.allowed || decision.reason !== undefined) return { ...decision, release: releaseNothing };
    let released = false;
    const release = async (): Promise<void> => {
      if (released) return;
      released = true;
      let result: MaybePromise<void>;
      try {
        result = this.store.release(storeKey, algorithm as ConcurrencyAlgorithm, leaseId);
      } catch (error) {
        this.report(error, storeKey, 'deny');
        return;
      }
      await this.quiet(result, storeKey);
    };
    return { ...decision, release };
  }

  /**
   * An operator's store call on a key (`call`, given the limiter's clock reading: a reset, a ban, an
   * override's write or read), with the limiter's timeout or {@link CONTROL_TIMEOUT_FLOOR_MS}, the longer. A store failure or a timeout is reported (a
   * `'storeError'` event, action `'deny'`: the key keeps what it had, so its limit still applies),
   * then thrown as a `StoreError` (the store's own when it is one) or the `StoreTimeoutError`: the
   * caller knows it was not done. A call that timed out may still apply when the store answers late.
   * Misuse errors (a closed store) are thrown without a report, as for decisions. `what` names the
   * verb in a failure's message ("failed to <what> the key").
   */
  control<T>(storeKey: string, what: string, call: (now: number | undefined) => MaybePromise<T>): MaybePromise<T> {
    let result: MaybePromise<T>;
    try {
      result = call(this.clock?.());
    } catch (error) {
      throw this.controlFailed(error, storeKey, what);
    }
    if (!(result instanceof Promise)) return result;
    const failed = (error: unknown): never => {
      throw this.controlFailed(error, storeKey, what);
    };
    return this.controlDeadlines === undefined ? result.then(undefined, failed) : this.controlDeadlines.race(result, (value: T) => value, failed);
  }

  /** Gives back `cost` units charged at `chargedAt` (see `Store.undo`) with the timeout; never throws (a failure is reported). */
  undo(storeKey: string, algorithm: Algorithm, cost: number, chargedAt?: number, delayMs?: number, idempotencyId?: string): MaybePromise<void> {
    let result: MaybePromise<void>;
    try {
      if (idempotencyId !== undefined) result = this.store.undo(storeKey, algorithm, cost, this.clock?.(), chargedAt, delayMs ?? 0, idempotencyId);
      else if (delayMs !== undefined && delayMs > 0) result = this.store.undo(storeKey, algorithm, cost, this.clock?.(), chargedAt, delayMs);
      else result = this.store.undo(storeKey, algorithm, cost, this.clock?.(), chargedAt);
    } catch (error) {
      return this.report(error, storeKey, 'deny');
    }
    return this.quiet(result, storeKey);
  }

  /** Settles a charge at its real cost (see `Store.settle`) with the timeout; never throws (a failure is reported). */
  settle(storeKey: string, algorithm: Algorithm, settlement: Settlement): MaybePromise<void> {
    let result: MaybePromise<void>;
    try {
      result = this.store.settle!(storeKey, algorithm, settlement, this.clock?.());
    } catch (error) {
      return this.report(error, storeKey, 'deny');
    }
    return this.quiet(result, storeKey);
  }

  /**
   * The request of `decision`, an admitting decision of the failure policy after a charge timed out,
   * was not served after all (a later limit denied it, or its client left): what the store grants
   * late for it is given back. Any other decision: nothing to do.
   */
  notServed(decision: Decision): void {
    this.notServedAfterTimeout.get(decision)?.();
  }

  /** @see CallGuard.servedAfterTimeout */
  servedAfterTimeout(decision: Decision, notServed: () => void): void {
    this.notServedAfterTimeout.set(decision, notServed);
  }

  /** @see CallGuard.giveBack (a lost release is dropped: the permit then expires with its lease). */
  giveBack(request: StoreRequest, grantedAt: number | undefined, grantedDelay: number): void {
    if (request.op === ACQUIRE) {
      const released = this.store.release(request.storeKey, request.algorithm as ConcurrencyAlgorithm, request.leaseId);
      if (released instanceof Promise) released.catch(ignore);
    } else if (charges(request.op) && !request.idempotent) {
      // An idempotent charge granted late stays: its retry, with the same id, is answered by it (one charge for both).
      void this.undo(request.storeKey, request.algorithm, request.cost, grantedAt, grantedDelay);
    }
  }

  /**
   * @see CallGuard.failed. A failure of the key's state alone (`StoreError.keyOnly`) is not the
   * store's: the circuit does not count it, and a probe that met one found the store answering.
   */
  failed(circuit: Circuit, error: unknown, request: StoreRequest, reason: FailureReason, probe: boolean, sentAt?: number): MaybePromise<Decision> {
    if ((error as Partial<StoreError> | null)?.keyOnly !== true) circuit.failed(reason, sentAt);
    else if (probe) circuit.probeSucceeded();
    this.report(error, request.storeKey, this.policy.action);
    return this.policy.decide(request.storeKey, request.algorithm, request.cost, request.op, reason);
  }

  /** One decision call: `extra` is a charge's `maxDelayMs` or an acquire's lease id. */
  private call(
    op: StoreOp,
    storeKey: string,
    algorithm: Algorithm,
    cost: number,
    extra: number | string | undefined,
    after: ((decision: Decision) => Decision) | undefined,
    idempotency?: IdempotentCharge,
  ): MaybePromise<Decision> {
    const circuit = this.circuitOf(storeKey, algorithm);
    const gate = circuit.gate();
    if (gate === SKIP_STORE) {
      const decision = this.policy.decide(storeKey, algorithm, cost, op, circuit.reason);
      return this.remote && !(decision instanceof Promise) ? afterIo(decision) : decision;
    }
    const now = this.clock === undefined ? undefined : this.clock();
    let result: MaybePromise<Decision>;
    try {
      if (idempotency !== undefined) result = this.store.consume(storeKey, algorithm, cost, now, extra as number | undefined, idempotency);
      else if (charges(op)) result = extra === undefined ? this.store.consume(storeKey, algorithm, cost, now) : this.store.consume(storeKey, algorithm, cost, now, extra as number);
      else if (op === PEEK) result = this.store.peek(storeKey, algorithm, cost, now);
      else result = this.store.acquire(storeKey, algorithm as ConcurrencyAlgorithm, extra as string, now);
    } catch (error) {
      return this.threwIn(circuit, error, { op, storeKey, algorithm, cost, leaseId: op === ACQUIRE ? (extra as string) : '', idempotent: idempotency !== undefined }, gate === PROBE_STORE);
    }
    if (!(result instanceof Promise)) {
      if (gate === PROBE_STORE) circuit.probeSucceeded();
      return result;
    }
    const request: StoreRequest = { op, storeKey, algorithm, cost, leaseId: op === ACQUIRE ? (extra as string) : '', idempotent: idempotency !== undefined };
    const pending = new PendingCall(this, request, circuit, gate === PROBE_STORE, circuit.now(), after);
    if (this.deadlines === undefined) return result.then(pending.answered, pending.failed);
    return this.deadlines.race(result, pending.answered, pending.failed, op === PEEK ? undefined : pending.answered);
  }

  /** The circuit of `storeKey`'s failure domain, or the one circuit of a store that is one domain. */
  private circuitOf(storeKey: string, algorithm: Algorithm): Circuit {
    return this.circuits === undefined ? this.circuit : this.circuits.of(this.store.failureDomain!(storeKey, algorithm));
  }

  private threwIn(circuit: Circuit, error: unknown, request: StoreRequest, probe = false): MaybePromise<Decision> {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR') throw error;
    return this.failed(circuit, error, request, 'store-error', probe);
  }

  /** The error a failed reset is thrown with, reported first unless it is a misuse error. */
  private controlFailed(error: unknown, storeKey: string, what: string): unknown {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR' && error.code !== 'RL_STORE_TIMEOUT') return error;
    const failure = error instanceof RateLimitError ? error : new StoreError(`The store failed to ${what} the key: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    this.report(failure, storeKey, 'deny');
    return failure;
  }

  /** A give-back or release answered with the timeout; a failure is reported (the units or the lease expire by themselves). Never rejects. */
  private quiet(result: MaybePromise<void>, storeKey: string): MaybePromise<void> {
    if (!(result instanceof Promise)) return;
    // A lost give-back errs on the safe side: the quota stays used until it recovers.
    const lost = (error: unknown): void => this.report(error, storeKey, 'deny');
    return this.deadlines === undefined ? result.then(ignore, lost) : this.deadlines.race(result, ignore, lost);
  }
}

/** `decision`, resolved after a macrotask: the I/O that is waiting runs first. */
function afterIo(decision: Decision): Promise<Decision> {
  return new Promise((resolve) => afterPendingIo(resolve, decision));
}

function ignore(): void {}
