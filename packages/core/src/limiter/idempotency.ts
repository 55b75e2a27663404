import { sha256OfUtf16 } from '../runtime.js';
import type { Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import {
  IDEMPOTENCY_FINGERPRINT_LENGTH,
  IDEMPOTENCY_ID_LENGTH,
  MAX_IDEMPOTENCY_REPLAYS,
  type IdempotentCharge,
} from '../store/interface.js';

/** The longest idempotency key taken (the draft's keys are UUIDs; anything longer is a bug or an attack). */
const MAX_ID_LENGTH = 512;

/** How a limiter's idempotent charges are remembered (its options, parsed): an {@link IdempotentCharge} without its id and fingerprint. */
export type IdempotencyConfig = Omit<IdempotentCharge, 'id' | 'fingerprint'>;

/**
 * The idempotent charge of a request with the id `id` and the fingerprint `fingerprint` (any strings),
 * remembered as the limiter's options say: both digested (SHA-256, base64url, cut to
 * {@link IDEMPOTENCY_ID_LENGTH} and {@link IDEMPOTENCY_FINGERPRINT_LENGTH} characters: 96 and 48 bits,
 * beyond any collision among the ids one key remembers), so a store keeps fixed-size records whatever
 * the client sends. `field` names the option in the `InvalidOptionError` for an id that is not a
 * non-empty string of at most 512 characters.
 */
export function idempotentCharge(
  id: unknown,
  fingerprint: string,
  remembered: IdempotencyConfig,
  field: string,
): IdempotentCharge {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH)
    throw new InvalidOptionError(field, id, `a non-empty string of at most ${MAX_ID_LENGTH} characters, or undefined`);
  const { ttlMs, maxIds, maxReplays } = remembered;
  return {
    id: digest(id, IDEMPOTENCY_ID_LENGTH),
    fingerprint: digest(fingerprint, IDEMPOTENCY_FINGERPRINT_LENGTH),
    ttlMs,
    maxIds,
    maxReplays,
  };
}

function digest(value: string, length: number): string {
  return sha256OfUtf16(value).slice(0, length);
}

const DEFAULT_IDEMPOTENCY_TTL_MS = 600_000;
const DEFAULT_IDEMPOTENCY_MAX_IDS = 100;
/** A key's remembered ids are read whole by each of its idempotent charges: a thousand at most. */
const MAX_IDEMPOTENCY_IDS = 1_000;
/**
 * Replays of one id before its retry is charged again: 5, the retries of the common clients' defaults
 * and then some (got 2, axios-retry 3, urllib3 3, the AWS SDKs' standard mode 2, gRPC at most 4), so a
 * client that retries as clients do is never charged twice, while one that replays an admitted
 * request in a loop runs it at most 6 times per unit charged.
 */
const DEFAULT_IDEMPOTENCY_MAX_REPLAYS = 5;

/**
 * The options `idempotencyTtl` (a duration, default 10 minutes), `idempotencyMaxIds` (an integer from
 * 1 to 1,000, default 100) and `idempotencyMaxReplays` (an integer from 1 to 1,000, default 5) of
 * `createLimiter`, given at `name`.
 */
export function parseIdempotencyOptions(
  o: Pick<IdempotencyOptions, 'idempotencyTtl'> & {
    readonly idempotencyMaxIds?: unknown;
    readonly idempotencyMaxReplays?: unknown;
  },
  name: string,
): IdempotencyConfig {
  const { idempotencyTtl: ttl, idempotencyMaxIds: maxIds, idempotencyMaxReplays: maxReplays } = o;
  if (maxIds !== undefined && !isCount(maxIds, MAX_IDEMPOTENCY_IDS)) {
    throw new InvalidOptionError(`${name}.idempotencyMaxIds`, maxIds, `an integer from 1 to ${MAX_IDEMPOTENCY_IDS}`);
  }
  if (maxReplays !== undefined && !isCount(maxReplays, MAX_IDEMPOTENCY_REPLAYS)) {
    throw new InvalidOptionError(
      `${name}.idempotencyMaxReplays`,
      maxReplays,
      `an integer from 1 to ${MAX_IDEMPOTENCY_REPLAYS}: how many retries of one admitted request are answered again without a charge (default ${DEFAULT_IDEMPOTENCY_MAX_REPLAYS}); to replay none, leave idempotencyKey out`,
    );
  }
  warnShortSpan(ttl, `${name}.idempotencyTtl`);
  return {
    ttlMs: ttl === undefined ? DEFAULT_IDEMPOTENCY_TTL_MS : spanOption(ttl, `${name}.idempotencyTtl`),
    maxIds: maxIds === undefined ? DEFAULT_IDEMPOTENCY_MAX_IDS : maxIds,
    maxReplays: maxReplays === undefined ? DEFAULT_IDEMPOTENCY_MAX_REPLAYS : maxReplays,
  };
}

/** Whether `value` is an integer from 1 to `max`. */
function isCount(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= max;
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
  /**
   * How many retries of one admitted request are answered again, charged nothing (default 5): the
   * next retry with the id is charged as a new request and, admitted, remembered afresh (its own
   * retries replay again). So a client that replays an admitted request in a loop runs it at most
   * `idempotencyMaxReplays + 1` times per unit charged, while the retries of common clients (2 to 4
   * by default) all replay. An integer from 1 to 1,000.
   */
  idempotencyMaxReplays?: number;
}
