import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { StoreTimeoutError } from '../errors.js';
import { tookNothing } from '../store/charge-marks.js';
import type { MaybePromise } from '../store/interface.js';
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
  failed(circuit: Circuit, error: unknown, request: StoreRequest, reason: FailureReason, probe: boolean, sentAt?: number): MaybePromise<Decision>;
  /** Gives back what the store granted, at `grantedAt` with `grantedDelay`, for a request nobody will use. */
  giveBack(request: StoreRequest, grantedAt: number | undefined, grantedDelay: number): void;
  /** Remembers that the admitting policy decision `decision` is to call `notServed` if its request turns out not served. */
  servedAfterTimeout(decision: Decision, notServed: () => void): void;
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
    private readonly circuit: Circuit,
    /** The call is the probe of an open circuit. */
    private readonly probe: boolean,
    /** When the call was sent, on the circuit's clock. */
    private readonly sentAt: number,
    /** Applied to the final decision (the deny cache's `remember`), in the step that settles the call. */
    private readonly after: ((decision: Decision) => Decision) | undefined,
  ) {}

  /** The store answered: in time, or late (then only a grant matters). */
  readonly answered = (decision: Decision): Decision => {
    if (this.outcome !== IN_TIME) {
      // Denied, or given back in its group's own step: nothing was granted.
      if (!decision.allowed || tookNothing(decision)) return decision;
      this.grantedAt = decision.at;
      this.grantedDelay = decision.delayMs;
      const charged = charges(this.request.op);
      if (this.outcome === DECIDING && charged) this.grantedWhileDeciding = true;
      else if (this.outcome === SERVED && charged) this.grantedAndKept = true;
      else if (this.outcome === NOT_SERVED || !charged) this.guard.giveBack(this.request, this.grantedAt, this.grantedDelay);
      return decision;
    }
    if (this.probe) this.circuit.probeSucceeded();
    else this.circuit.answered(this.sentAt);
    return this.after === undefined ? decision : this.after(decision);
  };

  /** The call failed or timed out: the policy answers; a late grant is kept until it has answered the request denied. */
  readonly failed = (error: unknown): MaybePromise<Decision> => {
    this.outcome = SERVED;
    const timedOut = error instanceof StoreTimeoutError;
    const decision = this.guard.failed(this.circuit, error, this.request, timedOut ? 'timeout' : 'store-error', this.probe, this.sentAt);
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
    if (this.grantedAndKept) this.guard.giveBack(this.request, this.grantedAt, this.grantedDelay);
  };

  private decided(decision: Decision, remembers: boolean): Decision {
    this.settledPolicy(decision.allowed);
    if (decision.allowed && remembers) this.guard.servedAfterTimeout(decision, this.notServed);
    return this.after === undefined ? decision : this.after(decision);
  }

  /** The policy answered the request, admitted (`served`) or not. */
  private settledPolicy(served: boolean): void {
    const wasDeciding = this.outcome === DECIDING;
    this.outcome = served ? SERVED : NOT_SERVED;
    if (!wasDeciding || !this.grantedWhileDeciding) return;
    if (served) this.grantedAndKept = true;
    else this.guard.giveBack(this.request, this.grantedAt, this.grantedDelay);
  }
}
