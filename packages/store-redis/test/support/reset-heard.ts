import type { Decision, Limiter } from '@rl/core';
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

/**
 * `key`'s next decision by `limiter` once it comes from the deny cache: a limiter's store starts
 * listening to notices with its first cached denial, and its cache answers nothing until that
 * subscription is live (real I/O: polled every 10 ms, at most about 2 s).
 */
export async function cachedDenial(limiter: Limiter, key: string): Promise<Decision> {
  let decision = await limiter.consume(key);
  for (let i = 0; i < 200 && decision.reason !== 'deny-cache'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    decision = await limiter.consume(key);
  }
  return decision;
}
