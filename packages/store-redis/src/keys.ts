import { createHash } from 'node:crypto';

/** User keys up to this many UTF-16 code units are kept readable inside the hash tag; longer ones are hashed. */
export const MAX_PLAIN_KEY_LENGTH = 200;

/**
 * A key may appear as it is inside `{…}` when it cannot end the hash tag early (`{`, `}`), cannot be
 * mistaken for a hashed key (a leading `#`), and encodes to UTF-8 without loss (no lone surrogate:
 * two different keys with lone surrogates would both become U+FFFD on the wire and share state).
 */
const PLAIN_KEY = /^[^#{}][^{}]*$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The hash tag content for a storage key: the key itself when that is safe (see {@link PLAIN_KEY}),
 * otherwise `#` and the base64url SHA-256 of the key's UTF-16 code units (lossless for any string,
 * 44 characters). Distinct keys give distinct tags (up to SHA-256 collisions), and every Redis key
 * of one limit carries the same tag, so it lands in one Cluster slot.
 */
export function hashTagOf(key: string): string {
  if (key.length <= MAX_PLAIN_KEY_LENGTH && PLAIN_KEY.test(key) && !LONE_SURROGATE.test(key)) return key;
  return `#${createHash('sha256').update(Buffer.from(key, 'utf16le')).digest('base64url')}`;
}

/**
 * The common start of the Redis keys of one storage key: `<prefix>{<hash tag>}`. The store appends
 * `:<stateTag>` (and `:<stateTag>:sum` for the sliding log's metadata). Cluster hashes only the tag, so
 * all keys of one storage key (every algorithm, the log and its metadata) share a slot.
 */
export function redisKeyBase(prefix: string, key: string): string {
  return `${prefix}{${hashTagOf(key)}}`;
}
