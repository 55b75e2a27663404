import { keyDigest } from '@rl/core/store';

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
  return digestOf(key);
}

/** `#` and the key's {@link keyDigest}: lossless for any string, 44 characters. */
function digestOf(key: string): string {
  return `#${keyDigest(key)}`;
}

/** Bucket hashes per prefix and algorithm kind in the compact layout, unless `RedisStore({ buckets })` says otherwise. */
export const DEFAULT_BUCKETS = 16_384;

/**
 * The bucket of a storage key in the compact layout: FNV-1a (32 bits) of its UTF-16 code units, modulo
 * `buckets`. Part of the storage format: every process that shares a Redis must agree on it.
 */
export function bucketOf(key: string, buckets: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % buckets;
}

/**
 * Fields (and values) of at most this many bytes keep a hash in Redis's compact encoding (listpack,
 * `hash-max-listpack-value`, 64 by default); one longer field would turn its whole bucket into a
 * hashtable, which takes more memory per field.
 */
export const MAX_PLAIN_FIELD_BYTES = 64;
/** At most 21 UTF-16 code units without surrogates, not starting with `#`: at most 63 UTF-8 bytes. */
const SHORT_PLAIN_FIELD = /^(?:[^#\uD800-\uDFFF][^\uD800-\uDFFF]{0,20})?$/;

/**
 * The hash field of a storage key in the compact layout: the key itself when it is at most
 * {@link MAX_PLAIN_FIELD_BYTES} UTF-8 bytes, encodes without loss (no lone surrogate) and does not start
 * with `#`; otherwise its digest (`#` and 43 characters, see {@link hashTagOf}).
 */
export function fieldOf(key: string): string {
  if (SHORT_PLAIN_FIELD.test(key)) return key;
  if (
    key.length <= MAX_PLAIN_FIELD_BYTES &&
    key.charCodeAt(0) !== 35 &&
    !LONE_SURROGATE.test(key) &&
    Buffer.byteLength(key) <= MAX_PLAIN_FIELD_BYTES
  ) {
    return key;
  }
  return digestOf(key);
}

/**
 * The hash tag a storage key names, Redis Cluster's way: the text between its first `{` and the next
 * `}`, when not empty; `undefined` for a key without one. Limits whose keys name one tag (`{user:42}`
 * in each: storage keys `minute:{user:42}`, `day:{user:42}`) are kept in one Cluster slot, so a
 * request's limits are decided in one script call there too.
 */
export function userHashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/**
 * The common start of the Redis keys of one storage key: `<prefix>{<hash tag>}`. The store appends
 * `:<stateTag>`, the layout revision when above 1, and each key's suffix (see the algorithm's
 * `script.layout`; for example `:swl2` and `:swl2:sum`). Cluster hashes only the tag, so all keys of
 * one storage key (every algorithm, a state and its metadata) share a slot. A key that names a hash
 * tag of its own ({@link userHashTag}) starts `<prefix>{#<bucket of that tag>}#<digest of the key>`:
 * the tag of the compact layout's bucket hash for it (see {@link placementOf}; `buckets` as the
 * store's), so that every limit of one tag, in either layout, shares one slot. (`}#` follows no other
 * tag, and a bucket hash's name continues with `:`: the names never meet.)
 */
export function redisKeyBase(prefix: string, key: string, buckets: number = DEFAULT_BUCKETS): string {
  const tag = userHashTag(key);
  return tag === undefined
    ? `${prefix}{${hashTagOf(key)}}`
    : `${prefix}{#${bucketOf(tag, buckets).toString(16)}}#${keyDigest(key)}`;
}

/** What places a storage key in the compact layout's buckets: the hash tag it names, else itself (see {@link userHashTag}). */
export function placementOf(key: string): string {
  return userHashTag(key) ?? key;
}
