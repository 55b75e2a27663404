import { afterIo as afterPendingIo } from '../runtime.js';
import type { Algorithm, ConcurrencyAlgorithm, Settlement } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { RateLimitError, StoreError } from '../errors.js';
import type { Charge, Charged, GiveBack, MaybePromise, Store } from '../store/interface.js';
import { PROBE_STORE, SKIP_STORE, type Circuit, type Circuits, type FailureReason } from './circuit.js';
import type { Deadlines } from './deadlines.js';
import type { StoreErrorEvent } from './events.js';
import { ACQUIRE, BLOCK, CHARGE, charges, PEEK, type FailurePolicy } from './failure-policy.js';
import { PendingCall, type CallCircuit, type CallGuard, type StoreRequest } from './late-grant.js';
import { withoutStore, type ChargeAnswer, type StoreCall } from './charge-path.js';
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

/** What a {@link StoreGuard} guards a store's calls with. */
export interface GuardParts {
  /** The user's clock, or undefined to let the store's own clock decide. */
  readonly clock: Clock | undefined;
  readonly circuits: GuardCircuits;
  /** Undefined without a timeout. */
  readonly deadlines: Deadlines | undefined;
  readonly policy: FailurePolicy;
  readonly report: FailureReport;
}

/**
 * The guard of one limiter's store calls: the circuit's gate (per failure domain), the timeout, the
 * failure policy, and what a late answer leaves behind ({@link PendingCall}). Every decision of the
 * limiter goes through {@link charge}, {@link peek} or {@link acquire}; {@link control} reports a
 * failure, then throws it; the quiet calls (give-backs, settles, releases) report a failure and never
 * throw. Every one of them has the timeout. Keys here are storage keys (prefix included).
 */
export class StoreGuard implements CallGuard {
  /** The store answers through I/O: a decision taken without it must still let I/O run (see {@link charge}). */
  private readonly remote: boolean;
  private readonly clock: Clock | undefined;
  private readonly circuit: Circuit;
  private readonly circuits: Circuits | undefined;
  private readonly deadlines: Deadlines | undefined;
  private readonly policy: FailurePolicy;
  private readonly report: FailureReport;
  /** The timeouts of operators' calls: the limiter's, at least {@link CONTROL_TIMEOUT_FLOOR_MS}; undefined without a timeout. */
  private readonly controlDeadlines: Deadlines | undefined;
  /** The store's own charge, as a {@link StoreCall}. */
  readonly storeCharge: StoreCall;

  constructor(
    private readonly store: Store,
    parts: GuardParts,
  ) {
    this.remote = !store.capabilities.local;
    ({ clock: this.clock, deadlines: this.deadlines, policy: this.policy, report: this.report } = parts);
    this.circuit = parts.circuits.circuit;
    this.circuits = parts.circuits.byDomain;
    this.controlDeadlines = parts.deadlines?.atLeast(CONTROL_TIMEOUT_FLOOR_MS);
    this.storeCharge = (charge, now) => store.charge(charge, now);
  }

  /**
   * The answer to `charge` (a consume; with `maxDelayMs`, a reservation), sent by `call` (the store's
   * own charge, or a share of a grouped call), or the failure policy's when the circuit is open or the
   * call fails or times out; a synchronous store answers synchronously. `op` {@link BLOCK}: a quota
   * lease's block, whose failure asks no fallback. Throws the misuse errors of the store (a closed
   * store), and the limiter clock's error for a time that is not finite (before the store is called).
   *
   * While the circuit is open, the policy decides without the store; for a remote store that decision
   * resolves after a macrotask (`setImmediate`), as the store's answer would have come through I/O: a
   * loop of `await limiter.consume()` would otherwise run on microtasks alone and starve the I/O that
   * the circuit's own probe needs to close. A local store's decisions never wait for I/O, so they stay
   * synchronous.
   */
  charge(charge: Charge, call: StoreCall, op: typeof CHARGE | typeof BLOCK = CHARGE): MaybePromise<ChargeAnswer> {
    const { key: storeKey, algorithm, cost } = charge;
    const circuit = this.circuitOf(storeKey, algorithm);
    const gate = circuit.gate();
    if (gate === SKIP_STORE) {
      const decided = this.policy.decide({ op, storeKey, algorithm, cost }, circuit.reason);
      if (decided instanceof Promise) return decided.then(withoutStore);
      return this.remote ? afterIo(withoutStore(decided)) : withoutStore(decided);
    }
    const now = this.clock === undefined ? undefined : this.clock();
    const request: StoreRequest = {
      op,
      storeKey,
      algorithm,
      cost,
      leaseId: '',
      idempotent: charge.idempotency !== undefined,
    };
    let result: MaybePromise<Charged>;
    try {
      result = call(charge, now);
    } catch (error) {
      return this.threwIn(error, request, { circuit, probe: gate === PROBE_STORE, sentAt: undefined });
    }
    if (!(result instanceof Promise)) {
      if (gate === PROBE_STORE) circuit.probeSucceeded();
      return result;
    }
    const pending = new PendingCall(this, request, { circuit, probe: gate === PROBE_STORE, sentAt: circuit.now() });
    if (this.deadlines === undefined) return result.then(pending.answered, pending.failed);
    return this.deadlines.race(result, pending.answered, pending.failed, pending.answered);
  }

  /** The failure policy's answer to `charge`, which the store could not answer for `reason` (a request whose lease block failed: one failure, one policy decision). */
  decideWithoutStore(charge: Charge, reason: FailureReason): MaybePromise<ChargeAnswer> {
    const decided = this.policy.decide(
      { op: CHARGE, storeKey: charge.key, algorithm: charge.algorithm, cost: charge.cost },
      reason,
    );
    return decided instanceof Promise ? decided.then(withoutStore) : withoutStore(decided);
  }

  /** As {@link charge} for a peek (nothing recorded). */
  peek(storeKey: string, algorithm: Algorithm, cost: number): MaybePromise<Decision> {
    return this.decide({ op: PEEK, storeKey, algorithm, cost, leaseId: '' });
  }

  /** As {@link charge} for a permit of a concurrency limit, named `leaseId`. */
  acquire(storeKey: string, algorithm: ConcurrencyAlgorithm, leaseId: string): MaybePromise<Decision> {
    return this.decide({ op: ACQUIRE, storeKey, algorithm, cost: 1, leaseId });
  }

  /** A charge that threw synchronously (the limiter's fast path called the store itself): misuse errors propagate; store failures get the policy. */
  threw(error: unknown, charge: Charge): MaybePromise<Decision> {
    const request: StoreRequest = {
      op: CHARGE,
      storeKey: charge.key,
      algorithm: charge.algorithm,
      cost: charge.cost,
      leaseId: '',
    };
    const answer = this.threwIn(error, request, {
      circuit: this.circuitOf(charge.key, charge.algorithm),
      probe: false,
      sentAt: undefined,
    });
    return answer instanceof Promise ? answer.then(decisionOf) : answer.decision;
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
   * override's write or read), with the limiter's timeout or {@link CONTROL_TIMEOUT_FLOOR_MS}, the
   * longer. A store failure or a timeout is reported (a `'storeError'` event, action `'deny'`: the key
   * keeps what it had, so its limit still applies), then thrown as a `StoreError` (the store's own when
   * it is one) or the `StoreTimeoutError`: the caller knows it was not done. A call that timed out may
   * still apply when the store answers late. Misuse errors (a closed store) are thrown without a
   * report, as for decisions. `what` names the verb in a failure's message ("failed to <what> the key").
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
    return this.controlDeadlines === undefined
      ? result.then(undefined, failed)
      : this.controlDeadlines.race(result, (value: T) => value, failed);
  }

  /** Gives back units (see `Store.giveBack`) with the timeout; never throws (a failure is reported). */
  giveBack(back: GiveBack): MaybePromise<void> {
    let result: MaybePromise<void>;
    try {
      result = this.store.giveBack(back, this.clock?.());
    } catch (error) {
      return this.report(error, back.key, 'deny');
    }
    return this.quiet(result, back.key);
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

  /** @see CallGuard.giveBackLate (a lost release is dropped: the permit then expires with its lease). */
  giveBackLate(request: StoreRequest, grantedAt: number | undefined, grantedDelay: number): void {
    if (request.op === ACQUIRE) {
      const released = this.store.release(request.storeKey, request.algorithm as ConcurrencyAlgorithm, request.leaseId);
      if (released instanceof Promise) released.catch(ignore);
    } else if (charges(request.op) && !request.idempotent) {
      // An idempotent charge granted late stays: its retry, with the same id, is answered by it (one charge for both).
      const delayMs = grantedDelay > 0 ? grantedDelay : undefined;
      void this.giveBack({
        key: request.storeKey,
        algorithm: request.algorithm,
        cost: request.cost,
        chargedAt: grantedAt,
        delayMs,
      });
    }
  }

  /**
   * @see CallGuard.failed. A failure of the key's state alone (`StoreError.keyOnly`) is not the
   * store's: the circuit does not count it, and a probe that met one found the store answering.
   */
  failed(error: unknown, request: StoreRequest, reason: FailureReason, at: CallCircuit): MaybePromise<Decision> {
    if ((error as Partial<StoreError> | null)?.keyOnly !== true) at.circuit.failed(reason, at.sentAt);
    else if (at.probe) at.circuit.probeSucceeded();
    this.report(error, request.storeKey, this.policy.action);
    return this.policy.decide(request, reason);
  }

  /** One peek or acquire: the store's decision, or the policy's. */
  private decide(request: StoreRequest): MaybePromise<Decision> {
    const { op, storeKey, algorithm, cost, leaseId } = request;
    const circuit = this.circuitOf(storeKey, algorithm);
    const gate = circuit.gate();
    if (gate === SKIP_STORE) {
      const decision = this.policy.decide(request, circuit.reason);
      return this.remote && !(decision instanceof Promise) ? afterIo(decision) : decision;
    }
    const now = this.clock === undefined ? undefined : this.clock();
    let result: MaybePromise<Decision>;
    try {
      result =
        op === PEEK
          ? this.store.peek(storeKey, algorithm, cost, now)
          : this.store.acquire(storeKey, algorithm as ConcurrencyAlgorithm, leaseId, now);
    } catch (error) {
      const answer = this.threwIn(error, request, { circuit, probe: gate === PROBE_STORE, sentAt: undefined });
      return answer instanceof Promise ? answer.then(decisionOf) : answer.decision;
    }
    if (!(result instanceof Promise)) {
      if (gate === PROBE_STORE) circuit.probeSucceeded();
      return result;
    }
    const pending = new PendingCall(this, request, { circuit, probe: gate === PROBE_STORE, sentAt: circuit.now() });
    const answered = (decision: Decision): Decision => pending.answered({ decision, took: 'charged' }).decision;
    const failed = (error: unknown): MaybePromise<Decision> => {
      const answer = pending.failed(error);
      return answer instanceof Promise ? answer.then(decisionOf) : answer.decision;
    };
    if (this.deadlines === undefined) return result.then(answered, failed);
    return this.deadlines.race(result, answered, failed, op === PEEK ? undefined : answered);
  }

  /** The circuit of `storeKey`'s failure domain, or the one circuit of a store that is one domain. */
  private circuitOf(storeKey: string, algorithm: Algorithm): Circuit {
    return this.circuits === undefined
      ? this.circuit
      : this.circuits.of(this.store.failureDomain!(storeKey, algorithm));
  }

  private threwIn(error: unknown, request: StoreRequest, at: CallCircuit): MaybePromise<ChargeAnswer> {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR') throw error;
    const decided = this.failed(error, request, 'store-error', at);
    return decided instanceof Promise ? decided.then(withoutStore) : withoutStore(decided);
  }

  /** The error a failed control is thrown with, reported first unless it is a misuse error. */
  private controlFailed(error: unknown, storeKey: string, what: string): unknown {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR' && error.code !== 'RL_STORE_TIMEOUT')
      return error;
    const failure =
      error instanceof RateLimitError
        ? error
        : new StoreError(
            `The store failed to ${what} the key: ${error instanceof Error ? error.message : String(error)}`,
            { cause: error },
          );
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

/** `value`, resolved after a macrotask: the I/O that is waiting runs first. */
function afterIo<T>(value: T): Promise<T> {
  return new Promise((resolve) => afterPendingIo(resolve, value));
}

function decisionOf(answer: ChargeAnswer): Decision {
  return answer.decision;
}

function ignore(): void {}
