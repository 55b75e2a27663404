import { makeDecision } from '../decision.js';
import type { Charge, Charged } from './interface.js';

/**
 * The answers of a `Store.chargeAll` that are not a charge's own decision, the same in every
 * store that groups (the Redis store's group script, the cluster store's holder).
 */

/** An allowed charge the group gave back in its own step: it took nothing, and its id (if any) was forgotten there. */
export function rolledBack({ decision, conflict }: Charged): Charged {
  return conflict === true ? { decision, took: 'rolled-back', conflict } : { decision, took: 'rolled-back' };
}

/** A charge after an enforced denial, never decided: an empty denial that reports nothing. */
export function notAsked({ algorithm }: Pick<Charge, 'algorithm'>): Charged {
  const decision = makeDecision({
    allowed: false,
    limit: algorithm.limit,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    delayMs: 0,
    policy: algorithm.policy,
    at: 0,
  });
  return { decision, took: 'not-asked' };
}
