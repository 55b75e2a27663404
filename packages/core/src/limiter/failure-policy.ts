import type { Algorithm } from '../algorithm.js';
import { makeDecision, type Decision, type DecisionReason } from '../decision.js';
import { InvalidOptionError } from '../errors.js';
import type { MaybePromise } from '../store/interface.js';
import type { FailureReason } from './circuit.js';
import type { FallbackLimiter, LimiterOptions } from './options.js';

/** What a store call was for: the failure policy answers the same question without the store. */
export const CHARGE = 0;
export const PEEK = 1;
export const ACQUIRE = 2;
/** A quota lease's block: a charge, but a failure is no decision of a request (no fallback is asked; see `QuotaLeases`). */
export const BLOCK = 3;
export type StoreOp = typeof CHARGE | typeof PEEK | typeof ACQUIRE | typeof BLOCK;

/** Whether `op` charges units in the store (a request's charge or a lease's block): a late grant of it is given back. */
export function charges(op: StoreOp): boolean {
  return op === CHARGE || op === BLOCK;
}

/**
 * A fallback limiter's answer to `op` for the user's `key` (without the main limiter's prefix) and a
 * checked `cost`: a charge is a consume (a reservation is decided without a delay), an acquire its
 * own lease decision. Asked through the fallback's own core, so its prefix, timeout and circuit apply.
 */
export type Fallback = (op: StoreOp, key: string, cost: number) => MaybePromise<Decision>;

/** The `onStoreError` option, checked; a fallback given as options is still to be built (by the wiring). */
export type ParsedStoreErrorPolicy =
  | { action: 'deny' | 'allow'; fallback?: undefined }
  | { action: 'fallback'; fallback: FallbackLimiter | LimiterOptions };

/** Checks the `onStoreError` option (default `'deny'`); `field` names it in errors. */
export function parseStoreErrorPolicy(policy: unknown, field = 'createLimiter.onStoreError'): ParsedStoreErrorPolicy {
  if (policy === undefined || policy === 'deny') return { action: 'deny' };
  if (policy === 'allow') return { action: 'allow' };
  if (policy && typeof policy === 'object' && 'fallback' in policy && Object.keys(policy).length === 1) {
    return { action: 'fallback', fallback: (policy as { fallback: FallbackLimiter | LimiterOptions }).fallback };
  }
  throw new InvalidOptionError(field, policy, "'deny', 'allow' or { fallback: <limiter options> }");
}

/** What the failure policy answers without the store: one store call's question. */
export interface PolicyQuestion {
  readonly op: StoreOp;
  /** The storage key (prefix included). */
  readonly storeKey: string;
  readonly algorithm: Algorithm;
  readonly cost: number;
}

/** What a limit that stands in for another, or is stood in for, must agree on. */
export interface PolicyLimit {
  readonly isConcurrencyLimit: boolean;
  readonly maxCost: number;
}

/** The limiter a failure policy decides for: its local clock, its retry interval, its key prefix. */
export interface PolicyOwner {
  /** The time of the policy's decisions ({@link Decision.at}): the limiter's local clock. */
  readonly clock: () => number;
  readonly retryIntervalMs: number;
  readonly keyPrefixLength: number;
}

/**
 * Checks that `fallback` can stand in for `owner`: the same kind of limit (a concurrency limit falls
 * back to a concurrency limit), and able to take every cost `owner` charges. `given` is the option as
 * the user wrote it, and `name` where the owner's options were given (`createLimiter`), for the error.
 */
export function checkFallback(owner: PolicyLimit, fallback: PolicyLimit, given: unknown, name: string): void {
  const field = `${name}.onStoreError.fallback`;
  if (owner.isConcurrencyLimit !== fallback.isConcurrencyLimit) {
    throw new InvalidOptionError(
      `${field}.algorithm`,
      given,
      'the same kind of limit as the main one (a concurrency limit falls back to a concurrency limit)',
    );
  }
  if (fallback.maxCost < owner.maxCost) {
    const n = owner.maxCost;
    throw new InvalidOptionError(
      field,
      given,
      `a fallback that takes every cost this limiter charges (up to ${n}): give the fallback a capacity of at least ${n}, or set ${name}.maxCost to the largest cost you charge`,
    );
  }
}

/**
 * The decision taken without the store, when it failed, timed out, or the circuit is open: deny
 * (fail closed: no units left, retry after the retry interval), allow (fail open: the limit less the
 * cost) or the decision of a fallback limiter (reason `'fallback'`). A fallback's permits are
 * released through its own `LeaseDecision.release()`.
 */
export class FailurePolicy {
  constructor(
    readonly action: 'deny' | 'allow' | 'fallback',
    private readonly owner: PolicyOwner,
    private readonly fallback: Fallback | undefined,
  ) {}

  /**
   * The decision for `asked` (its `cost`, already checked against the owner's `maxCost`, of the key
   * stored as `storeKey` under `algorithm`, the call's, for `op`), given the reason the store was not
   * used: a decision of the policy reports that algorithm's limit and policy. Synchronous unless the
   * fallback is asynchronous.
   */
  decide(asked: PolicyQuestion, reason: FailureReason): MaybePromise<Decision> {
    const { storeKey, algorithm, cost, op } = asked;
    const fallback = this.fallback;
    if (fallback !== undefined && op !== BLOCK) {
      const decision = fallback(op, storeKey.slice(this.owner.keyPrefixLength), cost);
      return decision instanceof Promise ? decision.then(asFallback) : asFallback(decision);
    }
    const retryIntervalMs = this.owner.retryIntervalMs;
    const allowed = this.action === 'allow';
    const remaining = allowed ? Math.max(0, Math.floor(algorithm.limit - cost)) : 0;
    const decision = makeDecision({
      allowed,
      limit: algorithm.limit,
      remaining,
      resetMs: 0,
      retryAfterMs: allowed ? 0 : retryIntervalMs,
      delayMs: 0,
      policy: algorithm.policy,
      at: this.owner.clock(),
    });
    (decision as { reason?: DecisionReason }).reason = reason;
    return decision;
  }
}

/** The fallback's decision (a lease keeps its own `release`), marked as such. */
function asFallback<D extends Decision>(decision: D): D {
  return { ...decision, reason: 'fallback' };
}
