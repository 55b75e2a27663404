import { heldKey, MAX_PLAIN_KEY_LENGTH, type Charge } from '@rl/core/store';

// A key is held by its digest past MAX_PLAIN_KEY_LENGTH (`heldKey` of @rl/core/store, which the
// limiter's deny cache uses too).
export { heldKey, MAX_PLAIN_KEY_LENGTH };

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
