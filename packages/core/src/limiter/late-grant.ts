import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { RateLimitError, StoreTimeoutError } from '../errors.js';
import type { Charged, MaybePromise } from '../store/interface.js';
import type { ChargeAnswer } from './charge-path.js';
import type { Circuit, FailureReason } from './circuit.js';
import { charges, type StoreOp } from './failure-policy.js';

/** One store call of a limiter: what it asked, for the failure policy and for a late grant's give-back. */
export interface StoreRequest {
  readonly op: StoreOp;
  /** The storage key (prefix included). */
  readonly storeKey: string;
  readonly algorithm: Algorithm;
  readonly cost: number;
  /** An acquire's lease id; '' otherwise. */
  readonly leaseId: string;
  /** An idempotent charge: granted late, it is kept (its retry is answered by it). */
  readonly idempotent?: boolean;
}

/** What a pending call needs of the guard that made it. */
export interface CallGuard {
  /** The call (sent at `sentAt`; undefined: now) failed or timed out: its circuit counts it, the limiter reports it, the policy decides. */
  failed(error: unknown, request: StoreRequest, reason: FailureReason, at: CallCircuit): MaybePromise<Decision>;
  /** Gives back what the store granted, at `grantedAt` with `grantedDelay`, for a request nobody will use. */
  giveBackLate(request: StoreRequest, grantedAt: number | undefined, grantedDelay: number): void;
}

/** Where a pending call stands with its circuit. */
export interface CallCircuit {
  readonly circuit: Circuit;
  /** The call is the probe of an open circuit. */
  readonly probe: boolean;
  /** When the call was sent, on the circuit's clock; undefined for a call that threw at once. */
  readonly sentAt: number | undefined;
}

/** How a call that went to the store was answered: in time, or by the policy (the request served or not). */
const IN_TIME = 0;
const SERVED = 1;
const NOT_SERVED = 2;
/** The policy is still deciding (an asynchronous fallback): a late grant waits for its answer. */
const DECIDING = 3;
type Outcome = typeof IN_TIME | typeof SERVED | typeof NOT_SERVED | typeof DECIDING;

/**
 * An asynchronous store call, from its answer to the end: the timeout's race, the failure policy, and
 * what the store grants after the call was answered without it. A permit granted late is always given
 * back (nobody holds it); the units of a charge when the request was answered denied (it was not
 * served, so it must not count); a request the policy admitted was served, and its units stay
 * charged, unless it later turns out not served (a later limit denied it, its client left:
 * {@link notServed}).
 */
export class PendingCall {
  private outcome: Outcome = IN_TIME;
  /** A charge the store admitted late while the policy was still deciding: given back if the policy denies. */
  private grantedWhileDeciding = false;
  /** A charge the store admitted late and kept, because the policy had admitted its request. */
  private grantedAndKept = false;
  /** The time of a late grant (its `at`), and its delay (a reservation's slot): a give-back goes there. */
  private grantedAt: number | undefined;
  private grantedDelay = 0;

  constructor(
    private readonly guard: CallGuard,
    private readonly request: StoreRequest,
    /** The call's circuit, whether it probes it, and when it was sent. */
    private readonly at: CallCircuit & { readonly sentAt: number },
  ) {}

  /** The store answered: in time, or late (then only a grant matters). */
  readonly answered = (charged: Charged): ChargeAnswer => {
    if (this.outcome !== IN_TIME) {
      const decision = charged.decision;
      // Denied, given back in its group's own step, never asked, or a replay: nothing was granted.
      if (!decision.allowed || charged.took !== 'charged') return charged;
      this.grantedAt = decision.at;
      this.grantedDelay = decision.delayMs;
      const charging = charges(this.request.op);
      if (this.outcome === DECIDING && charging) this.grantedWhileDeciding = true;
      else if (this.outcome === SERVED && charging) this.grantedAndKept = true;
      else if (this.outcome === NOT_SERVED || !charges(this.request.op))
        this.guard.giveBackLate(this.request, this.grantedAt, this.grantedDelay);
      return charged;
    }
    if (this.at.probe) this.at.circuit.probeSucceeded();
    else this.at.circuit.answered(this.at.sentAt);
    return charged;
  };

  /**
   * The call failed or timed out: the policy answers; a late grant is kept until it has answered the
   * request denied. A misuse error (a closed store, met by a grouped call) is thrown as it is.
   */
  readonly failed = (error: unknown): MaybePromise<ChargeAnswer> => {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR' && error.code !== 'RL_STORE_TIMEOUT')
      throw error;
    this.outcome = SERVED;
    const timedOut = error instanceof StoreTimeoutError;
    const decision = this.guard.failed(error, this.request, timedOut ? 'timeout' : 'store-error', this.at);
    const remembers = timedOut && charges(this.request.op);
    if (!(decision instanceof Promise)) return this.decided(decision, remembers);
    this.outcome = DECIDING;
    return decision.then(
      (d) => this.decided(d, remembers),
      (policyError: unknown) => {
        this.settledPolicy(false);
        throw policyError;
      },
    );
  };

  /** The request of an admitting policy decision was not served after all: give back a late grant, now or when it comes. */
  readonly notServed = (): void => {
    if (this.outcome !== SERVED) return;
    this.outcome = NOT_SERVED;
    if (this.grantedAndKept) this.guard.giveBackLate(this.request, this.grantedAt, this.grantedDelay);
  };

  private decided(decision: Decision, remembers: boolean): ChargeAnswer {
    this.settledPolicy(decision.allowed);
    return decision.allowed && remembers
      ? { decision, took: 'nothing', unserved: this.notServed }
      : { decision, took: 'nothing' };
  }

  /** The policy answered the request, admitted (`served`) or not. */
  private settledPolicy(served: boolean): void {
    const wasDeciding = this.outcome === DECIDING;
    this.outcome = served ? SERVED : NOT_SERVED;
    if (!wasDeciding || !this.grantedWhileDeciding) return;
    if (served) this.grantedAndKept = true;
    else this.guard.giveBackLate(this.request, this.grantedAt, this.grantedDelay);
  }
}
