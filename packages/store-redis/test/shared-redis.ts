/**
 * Redis for test files: {@link useRedisDeployments} for this package's tests (standalone and cluster),
 * {@link useRedisStore} / {@link startSharedRedis} for the adapters' and the examples' tests, on top of
 * {@link startRedisServer}: the server (or `REDIS_URL`), an ioredis client, and RedisStores with
 * prefixes of their own on it. Imported by relative path.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisStore } from '@rl/store-redis';
import { startRedisCluster, startRedisServer, type RedisClusterHandle, type RedisServerHandle } from './harness.js';

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

/** A standalone Redis and a 3-master Cluster for one test file of this package, with fresh prefixes. */
export interface RedisDeployments {
  /** A client of the standalone server (usable once `beforeAll` has run). */
  readonly standalone: Redis;
  /** A client of the cluster (usable once `beforeAll` has run). */
  readonly clustered: Cluster;
  /** A key prefix no other test of any run uses: `<label>:<pid>:<time>:<n>:`. */
  freshPrefix(): string;
}

/**
 * Registers, in the calling scope, a `beforeAll` that starts a standalone Redis and a Cluster (or uses
 * `REDIS_URL` / `REDIS_CLUSTER_NODES`) and connects a client to each, and an `afterAll` that
 * disconnects and stops them.
 */
export function useRedisDeployments(label: string): RedisDeployments {
  let server: RedisServerHandle | undefined;
  let cluster: RedisClusterHandle | undefined;
  let standalone: Redis | undefined;
  let clustered: Cluster | undefined;
  let counter = 0;
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
    standalone = new Redis(server.url);
    clustered = new Cluster(cluster.nodes);
  });
  afterAll(async () => {
    standalone?.disconnect();
    clustered?.disconnect();
    await Promise.all([server?.stop(), cluster?.stop()]);
  });
  return {
    get standalone() {
      if (!standalone) throw new Error('useRedisDeployments: the clients exist once beforeAll has run');
      return standalone;
    },
    get clustered() {
      if (!clustered) throw new Error('useRedisDeployments: the clients exist once beforeAll has run');
      return clustered;
    },
    freshPrefix() {
      counter++;
      return `${label}:${process.pid}:${Date.now().toString(36)}:${counter}:`;
    },
  };
}
