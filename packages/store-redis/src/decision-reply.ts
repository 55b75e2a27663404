import { decisionFromExact, markBanned, markConflict, markReplayed, type Algorithm, type Decision } from '@rl/core/store';

/**
 * A reply's decision at `offset`: six exact doubles, allowed, remaining, ms to the reset, to a retry
 * (read only when denied), of the delay, and the `now` it decided at (see prelude.lua); rounded as
 * every step's results are. An idempotent charge's first double says more (see idem-reply.lua): 2 a
 * replay (allowed, marked `markReplayed`), 3 and -1 a conflict (allowed and denied, marked `markConflict`);
 * a denial with a negative delay is a ban's (marked `markBanned`).
 */
export function decisionOf(r: Buffer, offset: number, algorithm: Algorithm): Decision {
  const o = offset;
  const allowed = r.readDoubleLE(o);
  const delay = r.readDoubleLE(o + 32);
  const at = r.readDoubleLE(o + 40);
  const decision = decisionFromExact(allowed >= 1, r.readDoubleLE(o + 8), r.readDoubleLE(o + 16), r.readDoubleLE(o + 24), delay, algorithm.limit, algorithm.policyAt?.(at) ?? algorithm.policy, at);
  // A ban's denial has the delay -1 (see block-reply.lua), a conflict's too (-1: denied).
  if (allowed <= 0 && delay < 0) markBanned(decision);
  if (allowed === 1 || allowed === 0) return decision;
  return allowed === 2 ? markReplayed(decision) : markConflict(decision);
}
