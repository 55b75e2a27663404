import { keyDigest } from '@rl/core/store';
import { keyAlone, type KeyParts } from './key-index.js';

/**
 * Keys longer than this (UTF-16 code units) are held by their SHA-256 digest: what a key costs the
 * store is bounded whatever its length (a key a limit takes from a request header can be 16 KB, and
 * `maxKeys` bounds the count of keys, not their size). The digest form (`\0` and the 43 characters
 * of `keyDigest`, lossless for lone surrogates) is shorter than the bound, so no plain key is taken
 * for one unless it is a preimage.
 */
export const MAX_PLAIN_KEY_LENGTH = 128;

/** The key the tables index `key` by: itself, or its digest when longer than {@link MAX_PLAIN_KEY_LENGTH}. */
export function heldKey(key: string): string {
  return key.length <= MAX_PLAIN_KEY_LENGTH ? key : `\0${keyDigest(key)}`;
}

/**
 * `at` as the tables hold it: itself (its parts too), or, when its key is longer than {@link
 * MAX_PLAIN_KEY_LENGTH}, its key's digest alone (no scope begins a digest: see `KeyIndex`).
 */
export function held(at: KeyParts): KeyParts {
  return at.key.length <= MAX_PLAIN_KEY_LENGTH ? at : keyAlone(heldKey(at.key));
}
