/**
 * One Redis for a test file outside this package (the adapters' and the examples' tests), on top of
 * {@link startRedisServer}: the server (or `REDIS_URL`), an ioredis client, and RedisStores with
 * prefixes of their own on it. Imported by relative path.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisStore } from '@rl/store-redis';
import { startRedisServer } from './harness.js';

export interface SharedRedis {
  /** `redis://127.0.0.1:<port>` (or `REDIS_URL`). */
  readonly url: string;
  readonly client: Redis;
  /** A RedisStore on `client` whose keys start with `prefix` (a fresh state for a fresh prefix). */
  store(prefix: string): RedisStore;
  /** Disconnects the client and stops the server (a `REDIS_URL` server keeps running). */
  stop(): Promise<void>;
}

/** Starts a Redis server (or uses `REDIS_URL`) and connects an ioredis client to it. */
export async function startSharedRedis(): Promise<SharedRedis> {
  const server = await startRedisServer();
  const client = new Redis(server.url);
  return {
    url: server.url,
    client,
    store: (prefix) => new RedisStore({ client, prefix }),
    async stop() {
      client.disconnect();
      await server.stop();
    },
  };
}

/**
 * Registers, in the calling scope, a `beforeAll` that starts a {@link SharedRedis} and an `afterAll`
 * that stops it. Returns a view whose `store` (prefix `<name>:<pid>:`) can be used once the `beforeAll`
 * has run, that is in the tests.
 */
export function useRedisStore(name: string): { readonly store: RedisStore } {
  let redis: SharedRedis | undefined;
  let store: RedisStore | undefined;
  beforeAll(async () => {
    redis = await startSharedRedis();
    store = redis.store(`${name}:${process.pid}:`);
  });
  afterAll(async () => {
    await redis?.stop();
  });
  return {
    get store() {
      if (!store) throw new Error('useRedisStore: the store exists once beforeAll has run');
      return store;
    },
  };
}
