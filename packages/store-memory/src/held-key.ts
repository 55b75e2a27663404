import { keyDigest, type Charge } from '@rl/core/store';

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

/** A storage key with its parts when the caller has them: a `Charge`, a `GiveBack`. */
export type KeyParts = Pick<Charge, 'key' | 'scope' | 'local'>;

/**
 * The scope the tables hold `at` under (see `KeyIndex.get`): its `scope` when it has both parts and a
 * key of at most {@link MAX_PLAIN_KEY_LENGTH}; else undefined (held by its storage key alone).
 */
export function heldScope(at: KeyParts): string | undefined {
  return at.local === undefined || at.key.length > MAX_PLAIN_KEY_LENGTH ? undefined : at.scope;
}

/** What the tables hold `at` by within {@link heldScope}: its `local` part, else its storage key as held ({@link heldKey}). */
export function heldLocal(at: KeyParts): string {
  return at.local === undefined || at.key.length > MAX_PLAIN_KEY_LENGTH ? heldKey(at.key) : at.local;
}
