import {
  decisionFromExact,
  markBanned,
  type Algorithm,
  type Charge,
  type Charged,
  type Decision,
} from '@rl/core/store';
import { overriddenPolicy } from './overrides.js';

/** Bytes of a decision's reply: six doubles (see prelude.lua); under a key's override, its policy follows (see src/overrides.ts). */
export const DECISION_BYTES = 48;

/**
 * Whether `reply` holds a decision from `offset` on: at least {@link DECISION_BYTES} bytes, the first
 * of them 0 (the low byte of the double `allowed`, which is 1, 0, 2, 3 or -1). Anything else is an
 * error's message: Redis's and the scripts' messages never start with a NUL byte (a batch makes sure).
 */
export function isDecisionReply(reply: Buffer, offset: number): boolean {
  return reply.length - offset >= DECISION_BYTES && reply[offset] === 0;
}

/**
 * A reply's decision at `offset`: six exact doubles, allowed, remaining, ms to the reset, to a retry
 * (read only when denied), of the delay, and the `now` it decided at (see prelude.lua); rounded as
 * every step's results are. The first double is 1 or 0, or for an idempotent charge (see
 * idem-reply.lua) 2 a replay (allowed), 3 and -1 a conflict (allowed and denied: what the charge took
 * is {@link chargedOf}'s); a denial with a negative delay is a ban's (marked `markBanned`). Bytes after
 * the six doubles are the policy of the key's override, the decision's limit and policy (see
 * src/overrides.ts).
 */
export function decisionOf(r: Buffer, offset: number, algorithm: Algorithm): Decision {
  const o = offset;
  const allowed = r.readDoubleLE(o);
  const delay = r.readDoubleLE(o + 32);
  const at = r.readDoubleLE(o + 40);
  const overridden = r.length - o > DECISION_BYTES ? overriddenPolicy(r, o + DECISION_BYTES, algorithm, at) : undefined;
  const limit = overridden === undefined ? algorithm.limit : overridden.limit;
  const policy = overridden === undefined ? (algorithm.policyAt?.(at) ?? algorithm.policy) : overridden.policy;
  const decision = decisionFromExact({
    allowed: allowed >= 1,
    remaining: r.readDoubleLE(o + 8),
    resetInMs: r.readDoubleLE(o + 16),
    retryInMs: r.readDoubleLE(o + 24),
    delayInMs: delay,
    limit,
    policy,
    at,
  });
  // A ban's denial has the delay -1 (see block-reply.lua), a conflict's too (-1: denied).
  if (allowed <= 0 && delay < 0) markBanned(decision);
  return decision;
}

/**
 * What `charge` took, from the reply of its script at `offset` (see idem-reply.lua for the first
 * double): 1 or 0, charged as the decision says, an admitting idempotent charge remembered under its
 * id (`idempotencyId`); 2 a replay, which took nothing; 3 and -1 a conflict, charged as a new request
 * and remembered under no id (the record is the first request's). While the key is blocked an
 * idempotent charge is denied as any charge (0): its id is neither read nor written.
 */
export function chargedOf(r: Buffer, offset: number, charge: Charge): Charged {
  const allowed = r.readDoubleLE(offset);
  const decision = decisionOf(r, offset, charge.algorithm);
  if (allowed === 0) return { decision, took: 'charged' };
  if (allowed === 1)
    return charge.idempotency === undefined
      ? { decision, took: 'charged' }
      : { decision, took: 'charged', idempotencyId: charge.idempotency.id };
  return allowed === 2 ? { decision, took: 'replayed' } : { decision, took: 'charged', conflict: true };
}
