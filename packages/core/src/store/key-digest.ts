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
