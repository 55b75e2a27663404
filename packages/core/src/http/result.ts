import type { AdaptivePermit, PermitOutcome } from '../adaptive/adaptive-concurrency.js';
import type { Composition } from '../compose/engine.js';
import { EVERYTHING, PERMITS, UNITS } from '../compose/engine.js';
import type { Run } from '../compose/run.js';
import type { ChargeAnswer } from '../limiter/charge-path.js';
import { actualPerLimit, settleRun } from '../compose/settle-run.js';
import type { Decision, DecisionReason, Policy } from '../decision.js';
import { tagResult, type ResultSource } from './double-count.js';
import type { HeaderSource } from './headers.js';
import { denialRetrySeconds } from './header-values.js';

const RESOLVED: Promise<void> = Promise.resolve();

/** Bits of a result's state (`#back`): its permits were released (or it has none), its units given back (or it has none), it was settled. */
const PERMITS_BACK = 1;
const UNITS_BACK = 2;
const SETTLED = 4;

/** `deniedBy` of a request the adaptive concurrency limit refused (an overload: 503), not one of the limits. */
export const OVERLOADED = -2;

/**
 * What a result reports for a middleware without rate limits (an `adaptive` limit alone): no quota
 * counted (`limit` and `remaining` Infinity), nothing to wait for, a policy named `none`.
 */
const NO_RATE_LIMIT: Decision = Object.freeze({
  allowed: true,
  limit: Infinity,
  remaining: Infinity,
  resetMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
  policy: Object.freeze({ name: 'none', quota: Infinity, windowSeconds: 1 }),
  at: 0,
});

/** What a result knows of the middleware that produced it: what its headers and double-count check read. */
export interface ResultContext extends ResultSource {
  /** Every limit is a dry-run one: the client sees none of them. */
  readonly allDryRun: boolean;
  /** Per limit, whether one real cost given to {@link RateLimitResult.settle} settles it; undefined: every limit. */
  readonly settles: readonly boolean[] | undefined;
  /** Some limit takes an idempotency key: a result then says whether it was a replay or a conflict. */
  readonly idempotent: boolean;
  /** Each limit's policy name in the headers (undefined: its decision's policy name, a per-request limit without a name). */
  readonly headerNames: readonly (string | undefined)[];
}

/**
 * The outcome of the limits for one request, handed to handlers as `req.rateLimit` (Express),
 * `request.rateLimit` (Fastify) or `ctx.state.rateLimit` (Koa). Its decision fields are those of
 * the binding limit: the one that denied, or the one with the fewest remaining.
 *
 * Dry-run (`dryRun: true`): a denial by a dry-run limit is reported here as the denial it would have
 * been (`allowed: false`, its status, retry and numbers) with `dryRun: true`, and the request went on.
 */
export class RateLimitResult implements HeaderSource {
  /** False when a limit denied the request; with {@link dryRun} true, that denial was not enforced and the request went on. */
  readonly allowed: boolean;
  /** True when a dry-run limit denied the request and it went on anyway (the numbers here are that limit's); false otherwise. */
  readonly dryRun: boolean;
  /**
   * 429 when a limit denied; 503 when a fail-closed store failure denied, or the adaptive limit refused
   * the request (`overloaded`); 200 when admitted (for a dry-run denial, the status it would have had).
   */
  readonly statusCode: 200 | 429 | 503;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the binding limit's full quota is back. */
  readonly resetMs: number;
  /**
   * 0 when admitted; otherwise milliseconds until a retry could be admitted. For a concurrency limit,
   * an upper bound (until its oldest lease expires): a release frees a permit sooner.
   */
  readonly retryAfterMs: number;
  /**
   * Retry-After in whole seconds, rounded up, from 1 to 999999999999999 when denied; 0 when admitted.
   * A denial by a concurrency limit says 1 (a permit frees when a request in flight ends, not after
   * its lease: see `CONCURRENCY_RETRY_AFTER_SECONDS`).
   */
  readonly retryAfterSeconds: number;
  /** Milliseconds the request is held before proceeding (shaping); 0 otherwise. */
  readonly delayMs: number;
  readonly policy: Policy;
  /** Set when the binding decision did not come from the store (see `DecisionReason`). */
  readonly reason: DecisionReason | undefined;
  /** The binding limit's key. */
  readonly key: string;
  /** Each limit's key, cost and decision, in the order of the limits; `undefined` for limits not asked after a denial. */
  readonly keys: readonly string[];
  readonly costs: readonly number[];
  readonly decisions: readonly (Decision | undefined)[];
  /** Index of the limit that denied (or whose delay exceeded `wait.maxDelay`); -1 when admitted; -2 (`OVERLOADED`) when the adaptive limit refused it. */
  readonly deniedBy: number;
  /** Index of the binding limit. */
  readonly binding: number;
  /** True when the units admitted for this request were given back (it was rejected or abandoned, or its outcome is not counted). */
  rolledBack: boolean;
  /**
   * True when a limit answered this admitted request with the decision of an earlier one of the same
   * idempotency key and fingerprint (`idempotencyKey`): it charged nothing more there.
   */
  readonly replayed: boolean;
  /** True when a limit remembered this request's idempotency key with another fingerprint: it was decided and charged as new. */
  readonly idempotencyConflict: boolean;
  /** True when the adaptive concurrency limit (the `adaptive` option) refused the request: 503, its rate limits' units given back. */
  readonly overloaded: boolean;
  // ES private fields: not enumerable, so logging or serialising the result shows only its data.
  readonly #composition: Composition<RateLimitResult>;
  readonly #run: Run;
  /**
   * What has happened to what the request took, in bits: {@link PERMITS_BACK}, {@link UNITS_BACK},
   * {@link SETTLED} (one field, not three: every result carries it).
   */
  #back: number;
  readonly #context: ResultContext;
  /** The adaptive limit's permit this admitted request holds (see {@link holdPermit}). */
  #permit: AdaptivePermit | undefined;

  /**
   * The outcome of `run`, a finished run of `composition` (see `Run`), for the middleware `context`;
   * with `overloadRetryMs`, the refusal of the run's admitted request by the adaptive limit, Retry-After
   * that many ms (see {@link overload}).
   */
  constructor(run: Run, composition: Composition<RateLimitResult>, context: ResultContext, overloadRetryMs?: number) {
    const { binding, dryRunDeniedBy, decisions } = run;
    const overloaded = overloadRetryMs !== undefined;
    const deniedBy = overloaded ? OVERLOADED : run.deniedBy;
    const denied = deniedBy !== -1;
    const dryRun = !denied && dryRunDeniedBy !== -1;
    const shown = dryRun ? dryRunDeniedBy : binding;
    // No decision to show: no rate limit (`binding` -1).
    const d = decisions[shown] ?? NO_RATE_LIMIT;
    this.#composition = composition;
    this.#run = run;
    this.allowed = !denied && !dryRun;
    this.dryRun = dryRun;
    this.statusCode = this.allowed
      ? 200
      : overloaded || (!d.allowed && (d.reason === 'store-error' || d.reason === 'timeout'))
        ? 503
        : 429;
    this.limit = d.limit;
    this.remaining = d.remaining;
    this.resetMs = d.resetMs;
    this.retryAfterMs = overloaded ? overloadRetryMs : run.retryAfterMs;
    // A concurrency denial says a short fixed hint, not its lease (see CONCURRENCY_RETRY_AFTER_SECONDS).
    this.retryAfterSeconds = this.allowed
      ? 0
      : overloaded
        ? Math.max(1, Math.ceil(overloadRetryMs / 1000))
        : denialRetrySeconds(run.retryAfterMs, composition.isConcurrencyLimit(shown), d.reason === undefined);
    this.delayMs = run.delayMs;
    this.policy = d.policy;
    this.reason = d.reason;
    this.key = run.keys[shown] ?? '';
    this.keys = run.keys;
    this.costs = run.costs;
    this.decisions = decisions;
    this.deniedBy = dryRun ? dryRunDeniedBy : deniedBy;
    this.binding = shown;
    this.replayed = context.idempotent && !denied && anyAnswer(run, (each) => each.took === 'replayed');
    this.idempotencyConflict = context.idempotent && anyAnswer(run, (each) => each.conflict === true);
    this.overloaded = overloaded;
    this.#context = context;
    this.#permit = undefined;
    // A denial has given back what the other limits took; it holds nothing to release.
    this.rolledBack = denied;
    this.#back = denied ? PERMITS_BACK | UNITS_BACK : 0;
    // In the constructor, so that every result has the same in-object layout (a property added later
    // would need a backing store of its own per result).
    tagResult(this, context);
  }

  /** The name of the policy that denied the request, as the RateLimit headers name it (the problem body's `violated-policies`). */
  get violatedPolicy(): string {
    const shown = this.binding;
    return this.#context.headerNames[shown] ?? (this.decisions[shown] ?? NO_RATE_LIMIT).policy.name;
  }

  /** The limit whose denial was enforced (the request was refused); -1 when the request went on, a dry-run denial included. */
  get enforcedDeniedBy(): number {
    // A dry-run denial was not enforced; otherwise the denial shown is the enforced one (or none).
    return this.dryRun ? -1 : this.deniedBy;
  }

  /** The binding limit among those the client sees (what the single-limit header formats show); -1 when every limit is a dry-run one. */
  get shownBinding(): number {
    return this.#context.allDryRun ? -1 : this.#run.binding;
  }

  /** True once the handler settled this request ({@link settle}): its limits' `actualCost` is then not called. */
  get settled(): boolean {
    return (this.#back & SETTLED) !== 0;
  }

  /**
   * Settles this request's charges at its real cost once its work is done (for example as a stream
   * ends): `actualCost` for each rate limit with an `actualCost` option (every rate limit when none has
   * one), or one cost per limit (`undefined`: not settled). The difference is charged or given back in
   * one store call per limit, in the window it was charged in (see `Limiter.settle`), and `actualCost`
   * is not called. Once: again, or after a give-back, it is ignored (warning `RL_ALREADY_SETTLED`). A
   * denial settles nothing. Throws `InvalidCostError` for a bad cost (in a handler: the framework's
   * error path), before anything is settled; the estimate then stands.
   */
  settle(actualCost: number | readonly (number | undefined)[]): Promise<void> {
    const actual = actualPerLimit(actualCost, this.decisions.length, this.#context.settles, 'result.settle.actualCost');
    this.#back |= SETTLED;
    if (this.enforcedDeniedBy !== -1) return RESOLVED;
    return settleRun(this.#composition, this.#run, actual) ?? RESOLVED;
  }

  /**
   * The refusal of this admitted request by the adaptive limit, Retry-After `retryAfterMs`: a new result
   * (503, `overloaded`), once this one has given back what its limits took (see `http/adaptive-admission.ts`).
   */
  overload(retryAfterMs: number): RateLimitResult {
    return new RateLimitResult(this.#run, this.#composition, this.#context, retryAfterMs);
  }

  /**
   * Gives this admitted request the adaptive limit's `permit` (the HTTP layer does, once the rate limits
   * admitted it): {@link release} releases it with the others. Once; a second permit is released at once.
   */
  holdPermit(permit: AdaptivePermit): void {
    if (this.#permit !== undefined || (this.#back & PERMITS_BACK) !== 0) return permit.release();
    this.#permit = permit;
  }

  /**
   * Releases the concurrency permits this request holds. Adapters call it when the response
   * finishes, the connection closes or the handler throws; only the first call does anything.
   * `outcome.failed`: the work failed (a 503 or 504, a response that never finished, a throw): the
   * adaptive limit counts a failure, not a latency; `outcome.cancelled`: it never ran.
   */
  release(outcome?: PermitOutcome): Promise<void> {
    if ((this.#back & PERMITS_BACK) !== 0) return RESOLVED;
    this.#back |= PERMITS_BACK;
    this.#permit?.release(outcome);
    const composition = this.#composition;
    if (!composition.hasLeases) return RESOLVED;
    return composition.giveBack(this.#run, PERMITS) ?? RESOLVED;
  }

  /**
   * Gives back the units the request took from its rate limits (not its permits: {@link release}),
   * once: its response's outcome is not counted (`skipFailedRequests`, `skipSuccessfulRequests`). Each
   * limit gets back what it was charged, in the window it was charged in (a window that has rolled over
   * since keeps its new count).
   */
  giveBackUnits(): Promise<void> {
    if ((this.#back & UNITS_BACK) !== 0) return RESOLVED;
    this.#back |= UNITS_BACK;
    this.rolledBack = true;
    return this.#composition.giveBack(this.#run, UNITS) ?? RESOLVED;
  }

  /**
   * The client left before the request proceeded (while held): gives back every unit and permit it
   * took and has not given back yet, once. Units go back as a cancellation (a reservation's slot is
   * freed) even when the permits were released first; a permit released twice is released once.
   */
  abandon(): Promise<void> {
    const back = this.#back;
    if ((back & UNITS_BACK) !== 0) {
      if ((back & PERMITS_BACK) !== 0) return RESOLVED;
      this.#back = back | PERMITS_BACK;
      this.#permit?.release({ cancelled: true });
      return this.#composition.giveBack(this.#run, PERMITS) ?? RESOLVED;
    }
    if ((back & PERMITS_BACK) === 0) this.#permit?.release({ cancelled: true });
    this.#back = back | UNITS_BACK | PERMITS_BACK;
    this.rolledBack = true;
    return this.#composition.giveBack(this.#run, EVERYTHING) ?? RESOLVED;
  }
}

/** True when some limit's answer in `run` is one `test` accepts (limits not asked have none). */
function anyAnswer(run: Run, test: (answer: ChargeAnswer) => boolean): boolean {
  for (let i = 0; i < run.limits; i++) {
    const answer = run.answerOf(i);
    if (answer !== undefined && test(answer)) return true;
  }
  return false;
}
