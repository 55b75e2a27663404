import type { Composition } from '../compose/engine.js';
import type { Decision, DecisionReason, Policy } from '../decision.js';
import { retryAfterSeconds, type HeaderSource } from './headers.js';

const RESOLVED: Promise<void> = Promise.resolve();

/**
 * The outcome of the limits for one request, handed to handlers as `req.rateLimit` (Express),
 * `request.rateLimit` (Fastify) or `ctx.state.rateLimit` (Koa). Its decision fields are those of
 * the binding limit: the one that denied, or the one with the fewest remaining.
 */
export class RateLimitResult implements HeaderSource {
  /** True when the request may proceed (after `delayMs`). */
  readonly allowed: boolean;
  /** 429 when a limit denied, 503 when a fail-closed store failure denied; 200 when admitted. */
  readonly statusCode: 200 | 429 | 503;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the binding limit's full quota is back. */
  readonly resetMs: number;
  /** 0 when admitted; otherwise milliseconds until a retry could be admitted. */
  readonly retryAfterMs: number;
  /** Retry-After in whole seconds, rounded up, from 1 to 999999999999999 when denied; 0 when admitted. */
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
  /** Index of the limit that denied (or whose delay exceeded `wait.maxDelay`); -1 when admitted. */
  readonly deniedBy: number;
  /** Index of the binding limit. */
  readonly binding: number;
  /** True when the units admitted for this request were given back (it was rejected or abandoned). */
  rolledBack: boolean;
  // ES private fields: not enumerable, so logging or serialising the result shows only its data.
  readonly #composition: Composition<RateLimitResult>;
  #settled: boolean;

  /** Built by the composition engine at the end of a run (see `Settle` for the arguments). */
  constructor(composition: Composition<RateLimitResult>, keys: readonly string[], costs: readonly number[], decisions: readonly (Decision | undefined)[],
    deniedBy: number, binding: number, retryAfterMs: number, delayMs: number) {
    const d = decisions[binding]!;
    const denied = deniedBy !== -1;
    this.#composition = composition;
    this.allowed = !denied;
    this.statusCode = !denied ? 200 : !d.allowed && (d.reason === 'store-error' || d.reason === 'timeout') ? 503 : 429;
    this.limit = d.limit;
    this.remaining = d.remaining;
    this.resetMs = d.resetMs;
    this.retryAfterMs = retryAfterMs;
    this.retryAfterSeconds = denied ? retryAfterSeconds(retryAfterMs) : 0;
    this.delayMs = delayMs;
    this.policy = d.policy;
    this.reason = d.reason;
    this.key = keys[binding]!;
    this.keys = keys;
    this.costs = costs;
    this.decisions = decisions;
    this.deniedBy = deniedBy;
    this.binding = binding;
    // A denial has given back what the other limits took; it holds nothing to release.
    this.rolledBack = denied;
    this.#settled = denied;
  }

  /**
   * Releases the concurrency permits this request holds. Adapters call it when the response
   * finishes, the connection closes or the handler throws; only the first call does anything.
   */
  release(): Promise<void> {
    if (this.#settled) return RESOLVED;
    this.#settled = true;
    const composition = this.#composition;
    if (!composition.hasLeases) return RESOLVED;
    return composition.giveBack(this.keys, this.costs, this.decisions, true) ?? RESOLVED;
  }

  /** The client left before the request proceeded (while held): gives back every unit and permit it took. */
  abandon(): Promise<void> {
    if (this.#settled) return RESOLVED;
    this.#settled = true;
    this.rolledBack = true;
    return this.#composition.giveBack(this.keys, this.costs, this.decisions) ?? RESOLVED;
  }
}
