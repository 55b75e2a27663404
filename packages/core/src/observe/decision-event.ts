import type { DecisionEvent, DecisionOutcome } from './observer.js';

/**
 * A decision event of `limit` with `outcome` and the defaults of a plain store answer (cost 1, no
 * delay, no store time, no key, not idempotent), `more` over them: what a test feeds an observer.
 */
export function decisionEvent(
  limit: string,
  outcome: DecisionOutcome,
  more: Partial<DecisionEvent> = {},
): DecisionEvent {
  return {
    limit,
    outcome,
    reason: undefined,
    cost: 1,
    delayMs: 0,
    storeMs: undefined,
    key: undefined,
    idempotency: undefined,
    ...more,
  };
}
