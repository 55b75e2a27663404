import { createHash } from 'node:crypto';
import { InvalidOptionError } from '../errors.js';
import type { Decision } from '../decision.js';
import { markIdempotent, wasReplayed } from '../store/charge-marks.js';
import { IDEMPOTENCY_FINGERPRINT_LENGTH, IDEMPOTENCY_ID_LENGTH, type IdempotentCharge, type MaybePromise } from '../store/interface.js';

/** The longest idempotency key taken (the draft's keys are UUIDs; anything longer is a bug or an attack). */
const MAX_ID_LENGTH = 512;

/**
 * The idempotent charge of a request with the id `id` and the fingerprint `fingerprint` (any strings),
 * remembered as the limiter's options say: both digested (SHA-256, base64url, cut to
 * {@link IDEMPOTENCY_ID_LENGTH} and {@link IDEMPOTENCY_FINGERPRINT_LENGTH} characters: 96 and 48 bits,
 * beyond any collision among the ids one key remembers), so a store keeps fixed-size records whatever
 * the client sends. `field` names the option in the `InvalidOptionError` for an id that is not a
 * non-empty string of at most 512 characters.
 */
export function idempotentCharge(id: unknown, fingerprint: string, remembered: { readonly ttlMs: number; readonly maxIds: number }, field: string): IdempotentCharge {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) throw new InvalidOptionError(field, id, `a non-empty string of at most ${MAX_ID_LENGTH} characters, or undefined`);
  return { id: digest(id, IDEMPOTENCY_ID_LENGTH), fingerprint: digest(fingerprint, IDEMPOTENCY_FINGERPRINT_LENGTH), ttlMs: remembered.ttlMs, maxIds: remembered.maxIds };
}

function digest(value: string, length: number): string {
  return createHash('sha256').update(Buffer.from(value, 'utf16le')).digest('base64url').slice(0, length);
}

/** `result` with its charge's idempotency id kept (a give-back then forgets it in the store); a replay took nothing and keeps none. */
export function idempotentOf(result: MaybePromise<Decision>, id: string): MaybePromise<Decision> {
  const kept = (decision: Decision): Decision => {
    if (decision.reason === undefined && !wasReplayed(decision)) markIdempotent(decision, id);
    return decision;
  };
  return result instanceof Promise ? result.then(kept) : kept(result);
}
