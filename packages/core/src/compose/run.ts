import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import type { ChargeAnswer } from '../limiter/charge-path.js';
import { receipted } from '../limiter/receipt.js';
import type { Charge, IdempotentCharge } from '../store/interface.js';

/**
 * One request's run through a composition of limits: what the caller resolved for each limit (its key,
 * its cost, its algorithm when chosen per request), the charge the engine made of them, and what it
 * found (each limit's answer and decision, who denied, who binds, the retry and the delay). The caller
 * fills the inputs, the engine the rest; results and give-backs read it. Index `i` is limit `i`, in
 * the order the limits are charged.
 */
export class Run {
  /** Each limit's checked key. */
  readonly keys: string[];
  /** Each limit's checked cost (1 for a concurrency limit). */
  readonly costs: number[];
  /**
   * Each limit's algorithm for this run when some limit chooses it per request (`undefined` entries:
   * the limiter's own, checked by its `checkCallAlgorithm`, the cost against it); undefined when none does.
   */
  readonly algorithms: (Algorithm | undefined)[] | undefined;
  /** Each limit's idempotent charge when some limit has one (`undefined` entries: none); undefined when none does. */
  readonly idempotency: (IdempotentCharge | undefined)[] | undefined;
  /** Each limit's decision (that of its answer); `undefined` for limits not asked after a denial. */
  readonly decisions: (Decision | undefined)[];
  /**
   * Each rate limit's charge (see {@link chargeOf}) when there are several limits; undefined for one,
   * whose charge is {@link onlyCharge}: a one-limit run allocates no per-limit array it never shows.
   */
  private readonly charges: (Charge | undefined)[] | undefined;
  /** The charge of a one-limit run (see {@link charges}). */
  private onlyCharge: Charge | undefined = undefined;
  /** Each limit's answer (see {@link answerOf}) when there are several limits; undefined for one, whose answer is {@link onlyAnswer}. */
  private readonly answers: (ChargeAnswer | undefined)[] | undefined;
  /** The answer of a one-limit run (see {@link answers}). */
  private onlyAnswer: ChargeAnswer | undefined = undefined;
  /** The limit that denied (or whose delay exceeded the run's `maxDelayMs`); -1 when admitted. */
  deniedBy = -1;
  /** The limit whose numbers the outcome reports: the denying one, else the fewest remaining among those whose store answered. */
  binding = -1;
  /**
   * 0 when admitted; the denial's `retryAfterMs`, or how much longer than `maxDelayMs` the request
   * would have had to wait. When admitted with a dry-run denial, that denial's.
   */
  retryAfterMs = 0;
  /** The longest delay of the enforced limits when admitted; 0 when denied. */
  delayMs = 0;
  /** When admitted, the first dry-run limit that denied (or would have held it longer than `maxDelayMs`); -1 otherwise. */
  dryRunDeniedBy = -1;

  /** A run of `limits` limits; `perRequest`: some limit chooses its algorithm per request; `idempotent`: some limit takes an idempotency key. */
  constructor(limits: number, perRequest = false, idempotent = false) {
    this.keys = limits === 1 ? [''] : new Array<string>(limits);
    this.costs = limits === 1 ? [0] : new Array<number>(limits);
    this.algorithms = perRequest ? new Array<Algorithm | undefined>(limits) : undefined;
    this.idempotency = idempotent ? new Array<IdempotentCharge | undefined>(limits) : undefined;
    this.decisions = limits === 1 ? [undefined] : new Array<Decision | undefined>(limits);
    this.charges = limits === 1 ? undefined : new Array<Charge | undefined>(limits);
    this.answers = limits === 1 ? undefined : new Array<ChargeAnswer | undefined>(limits);
  }

  /** How many limits the run has. */
  get limits(): number {
    return this.decisions.length;
  }

  /**
   * Limit `i`'s charge, made by the engine from the inputs above (its storage key, its algorithm, its
   * cost, the run's `maxDelayMs`, its idempotency, whether it is enforced); `undefined` for a
   * concurrency limit and before the run. A settle below the estimate replaces it with one of the cost
   * the request is known to have taken ({@link setCharge}), which a later give-back returns.
   */
  chargeOf(i: number): Charge | undefined {
    return this.charges === undefined ? this.onlyCharge : this.charges[i];
  }

  /** Sets limit `i`'s charge (see {@link chargeOf}). */
  setCharge(i: number, charge: Charge): void {
    if (this.charges === undefined) this.onlyCharge = charge;
    else this.charges[i] = charge;
  }

  /** Limit `i`'s answer (what its charge took); `undefined` for limits not asked after a denial. */
  answerOf(i: number): ChargeAnswer | undefined {
    return this.answers === undefined ? this.onlyAnswer : this.answers[i];
  }

  /** Limit `i` answered `answer` (its decision carries the receipt of a replay or a conflict: see `receiptOf`). */
  answered(i: number, answer: ChargeAnswer): void {
    if (this.answers === undefined) this.onlyAnswer = answer;
    else this.answers[i] = answer;
    this.decisions[i] = receipted(answer);
  }

  /** Forgets the answers of the limits after `i` (decided in one step with the denial of `i`, they were never the request's). */
  dropAfter(i: number): void {
    this.answers?.fill(undefined, i + 1);
    this.decisions.fill(undefined, i + 1);
  }
}

/** Limit `i`'s algorithm in `run`: the one chosen for the request, else its limiter's own (`ownAlgorithm`). */
export function algorithmIn(run: Run, i: number, ownAlgorithm: Algorithm | undefined): Algorithm {
  return run.algorithms?.[i] ?? ownAlgorithm!;
}
