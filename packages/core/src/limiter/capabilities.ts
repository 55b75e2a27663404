import { UnsupportedError } from '../errors.js';
import type { StoreCapabilities } from '../store/interface.js';

/** The capabilities a verb or an option may need of its store, each with what a store that has it does. */
const DOES = {
  settle: 'settles charges at their real cost',
  reservations: 'runs reservations',
  idempotency: 'runs idempotent charges',
} as const;

/** A store capability that a verb or an option needs (see `StoreCapabilities`). */
export type NeededCapability = keyof typeof DOES;

/**
 * Throws the one `UnsupportedError` of `capability` unless `store` declares it: `what` (the verb, or
 * the option, as the user wrote it) needs a store that has it. Checked once, where the verb is called
 * or the middleware built; the charge path never checks again.
 */
export function requireCapability(
  store: { readonly capabilities: StoreCapabilities },
  capability: NeededCapability,
  what: string,
): void {
  if (store.capabilities[capability] !== true) {
    throw new UnsupportedError(
      `${what} needs a store that ${DOES[capability]} (capabilities.${capability}), such as MemoryStore or RedisStore.`,
    );
  }
}
