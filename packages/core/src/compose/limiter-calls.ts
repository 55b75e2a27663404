import type { Decision } from '../decision.js';
import type { LeaseDecision, Limiter } from '../limiter.js';
import type { MaybePromise } from '../store.js';

// Every call the composition engine makes to a limiter goes through this module, and nothing else
// does. The engine hands over keys and costs its caller has already checked; these functions are the
// one place that knows which limiter entry point takes them.

/** Charges `cost` units of a rate limit: a decision, synchronous when the limiter is. */
export function consumeChecked(limiter: Limiter, key: string, cost: number): MaybePromise<Decision> {
  return limiter.synchronous ? limiter.consumeSync(key, cost) : limiter.consume(key, cost);
}

/** Takes a permit of a concurrency limit. */
export function acquireChecked(limiter: Limiter, key: string): MaybePromise<LeaseDecision> {
  return limiter.acquire(key);
}

/**
 * Gives back `cost` units charged earlier; never rejects (a lost give-back leaves the quota used
 * until it recovers, which errs on the safe side). A synchronous limiter's store has given the units
 * back by the time `undo` returns (only its error report is asynchronous), so the engine need not wait.
 */
export function undoChecked(limiter: Limiter, key: string, cost: number): MaybePromise<void> {
  const done = limiter.undo(key, cost);
  return limiter.synchronous ? undefined : done;
}

/** Returns the permit of an admitted concurrency decision. */
export function releasePermit(decision: LeaseDecision): MaybePromise<void> {
  return decision.release();
}

/** True when every call above answers this limiter without a promise. */
export function answersSynchronously(limiter: Limiter): boolean {
  return limiter.synchronous && limiter.algorithm.stateKind !== 'leases';
}
