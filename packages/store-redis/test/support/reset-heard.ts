import type { RedisStore } from '@rl/store-redis';

/** Listeners waiting for a message, held strongly: a store holds its listeners weakly, and nothing else holds these. */
const waiting = new Set<(key: string | undefined) => void>();

/**
 * Resolves once `store` has told its listeners (its deny caches among them) of `storageKey`'s reset,
 * ban, unban or override, or that it may have missed one (a new subscription).
 */
export function heard(store: RedisStore, storageKey: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const listener = (key: string | undefined): void => {
      if (key !== undefined && key !== storageKey) return;
      waiting.delete(listener);
      resolve();
    };
    waiting.add(listener);
    store.watchResets(listener);
  });
}
