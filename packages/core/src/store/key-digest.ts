import { sha256OfUtf16 } from '../runtime.js';

/**
 * The base64url SHA-256 of a key's UTF-16 code units (43 characters): lossless for any string, lone
 * surrogates included (a UTF-8 encoding would turn every lone surrogate into U+FFFD, and two keys
 * differing only there into one digest). Stores hold a key too long or too awkward to keep as it is
 * by this digest; distinct keys give distinct digests up to SHA-256 collisions.
 */
export function keyDigest(key: string): string {
  return sha256OfUtf16(key);
}

/**
 * Keys longer than this (UTF-16 code units) are held by their digest ({@link heldKey}): what a key
 * costs a table (a store's, a limiter's deny cache) is bounded whatever its length (a key a limit
 * takes from a request header can be 16 KB, and a `maxKeys` bounds the count of keys, not their
 * size). The digest form (`\0` and the 43 characters of {@link keyDigest}) is shorter than the bound,
 * so no plain key is taken for one unless it is a preimage.
 */
export const MAX_PLAIN_KEY_LENGTH = 128;

/** The key a table indexes `key` by: itself, or `\0` and its digest when longer than {@link MAX_PLAIN_KEY_LENGTH}. */
export function heldKey(key: string): string {
  return key.length <= MAX_PLAIN_KEY_LENGTH ? key : `\0${keyDigest(key)}`;
}
