import type { Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import { Redis } from 'ioredis';

/** The store of the running example, whichever runtime serves it (`server.ts`, `bun.ts`, `deno.ts`). */
export interface OpenedStore {
  readonly store: Store;
  /** `memory` or `redis`, for the line that says where the example listens. */
  readonly kind: 'memory' | 'redis';
  /** Closes the store and, on Redis, the client (at once when Redis is unreachable). */
  close(): Promise<void>;
  /** Drops the Redis connection at once (an exit on an error); nothing on memory. */
  disconnect(): void;
}

/**
 * Memory store by default; Redis (shared by every instance of the app) when `redisUrl` is given. The
 * client connects in the background: nothing waits for Redis, so an app whose Redis is down at start
 * starts anyway, and the failure policy answers (deny: 503) until Redis is there.
 */
export function openStore(redisUrl: string | undefined): OpenedStore {
  if (!redisUrl) {
    const store = new MemoryStore();
    return { store, kind: 'memory', close: async () => store.close(), disconnect: () => {} };
  }
  const redis = new Redis(redisUrl);
  // ioredis retries forever while Redis is unreachable: say each new error once, not at every retry
  // (without a listener, ioredis prints every failed attempt with its stack).
  let lastError = '';
  redis.on('error', (error: Error) => {
    if (error.message !== lastError) console.error(`redis: ${error.message}`);
    lastError = error.message;
  });
  redis.on('ready', () => (lastError = ''));
  const store = new RedisStore({ client: redis });
  return {
    store,
    kind: 'redis',
    async close() {
      await store.close();
      await closeRedis(redis);
    },
    disconnect: () => redis.disconnect(),
  };
}

/**
 * Closes the Redis client without waiting for a server that is not there: QUIT when connected (the
 * replies in flight arrive first), otherwise a disconnect, which also stops the reconnect attempts
 * (a QUIT would wait in the offline queue until Redis comes back).
 */
async function closeRedis(client: Redis): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
