import { sha256OfUtf16 } from '../runtime.js';
import type { Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { spanOption } from '../options.js';
import type { Decision } from '../decision.js';
import { markIdempotent, wasConflict, wasReplayed } from '../store/charge-marks.js';
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
  return sha256OfUtf16(value).slice(0, length);
}

/** `result` with its charge's idempotency id kept (a give-back then forgets it in the store); a replay took nothing and a conflict owns no record: they keep none. */
export function idempotentOf(result: MaybePromise<Decision>, id: string): MaybePromise<Decision> {
  const kept = (decision: Decision): Decision => {
    // A conflict's record is the first request's: its give-back must not forget it.
    if (decision.reason === undefined && !wasReplayed(decision) && !wasConflict(decision)) markIdempotent(decision, id);
    return decision;
  };
  return result instanceof Promise ? result.then(kept) : kept(result);
}

const DEFAULT_IDEMPOTENCY_TTL_MS = 600_000;
const DEFAULT_IDEMPOTENCY_MAX_IDS = 100;
/** A key's remembered ids are read whole by each of its idempotent charges: a thousand at most. */
const MAX_IDEMPOTENCY_IDS = 1_000;

/** The options `idempotencyTtl` (a duration, default 10 minutes) and `idempotencyMaxIds` (an integer from 1 to 1,000, default 100) of `createLimiter`, given at `name`. */
export function parseIdempotencyOptions(ttl: unknown, maxIds: unknown, name: string): { readonly ttlMs: number; readonly maxIds: number } {
  if (maxIds !== undefined && (typeof maxIds !== 'number' || !Number.isInteger(maxIds) || maxIds < 1 || maxIds > MAX_IDEMPOTENCY_IDS)) {
    throw new InvalidOptionError(`${name}.idempotencyMaxIds`, maxIds, `an integer from 1 to ${MAX_IDEMPOTENCY_IDS}`);
  }
  return {
    ttlMs: ttl === undefined ? DEFAULT_IDEMPOTENCY_TTL_MS : spanOption(ttl, `${name}.idempotencyTtl`),
    maxIds: maxIds === undefined ? DEFAULT_IDEMPOTENCY_MAX_IDS : maxIds,
  };
}

/** The options of `createLimiter` for idempotent charges. */
export interface IdempotencyOptions {
  /**
   * How long an idempotent charge's admitting decision is remembered (`consume(key, cost, {
   * idempotencyKey })`): a retry with the same id and fingerprint within it gets that decision back
   * and is charged nothing. Default `'10m'`: longer than a client's retries of one request take
   * (backoff capped at a minute gives up within minutes; rl's own Retry-After is at most a window),
   * short enough that a key remembers few ids and their memory comes back soon.
   */
  idempotencyTtl?: Duration;
  /** The most ids one key remembers (default 100); past it a new id forgets the oldest. An integer from 1 to 1,000. */
  idempotencyMaxIds?: number;
}
