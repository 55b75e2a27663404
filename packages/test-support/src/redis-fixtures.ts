/**
 * Redis for test files, on top of {@link startRedisServer} and {@link startRedisCluster}: the servers
 * (or `REDIS_URL` / `REDIS_CLUSTER_NODES`, refused unless `RL_TEST_REDIS_DISPOSABLE=1`: the tests
 * pause, flush and fill them), ioredis clients connected to them, and key prefixes that no other test
 * of any run uses, so that a test gets a fresh state by taking a fresh prefix.
 *
 * This package does not depend on `@rl/store-redis` (whose own tests use it): a test builds its
 * `RedisStore` on the client it is given.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import {
  refuseNonDisposableRedis,
  startRedisCluster,
  startRedisServer,
  type RedisClusterHandle,
  type RedisServerHandle,
} from './redis-server.js';

/** A key prefix no other test of any run uses: `<label>:<pid>:<time>:<n>:`. */
function prefixes(label: string): () => string {
  let counter = 0;
  return () => `${label}:${process.pid}:${Date.now().toString(36)}:${++counter}:`;
}

/** A standalone Redis with a client, for a test file. */
export interface SharedRedis {
  /** `redis://127.0.0.1:<port>` (or `REDIS_URL`). */
  readonly url: string;
  readonly client: Redis;
  /** A key prefix no other test of any run uses (a fresh state for a RedisStore). */
  freshPrefix(): string;
  /** Disconnects the client and stops the server (a `REDIS_URL` server keeps running). */
  stop(): Promise<void>;
}

/** Starts a Redis server (or uses `REDIS_URL`) and connects an ioredis client to it. */
export async function startSharedRedis(label: string): Promise<SharedRedis> {
  const server = await startRedisServer();
  const client = new Redis(server.url);
  return {
    url: server.url,
    client,
    freshPrefix: prefixes(label),
    async stop() {
      client.disconnect();
      await server.stop();
    },
  };
}

/**
 * Registers, in the calling scope, a `beforeAll` that starts a {@link SharedRedis} and an `afterAll`
 * that stops it. Returns a view of it that can be used once the `beforeAll` has run, that is in the
 * tests and their hooks.
 */
export function useRedis(label: string): Omit<SharedRedis, 'stop'> {
  let redis: SharedRedis | undefined;
  const freshPrefix = prefixes(label);
  beforeAll(async () => {
    redis = await startSharedRedis(label);
  });
  afterAll(async () => {
    await redis?.stop();
  });
  const started = (): SharedRedis => {
    if (!redis) throw new Error('useRedis: the server and client exist once beforeAll has run');
    return redis;
  };
  return {
    get url() {
      return started().url;
    },
    get client() {
      return started().client;
    },
    freshPrefix,
  };
}

/** Which of {@link RedisDeployments} a test runs on. */
export type RedisDeployment = 'standalone' | 'cluster';

/** A standalone Redis and a 3-master Cluster for one test file, with fresh prefixes. */
export interface RedisDeployments {
  /** A client of the standalone server (usable once `beforeAll` has run). */
  readonly standalone: Redis;
  /** A client of the cluster (usable once `beforeAll` has run). */
  readonly clustered: Cluster;
  /** The standalone server's URL, for clients of other libraries (usable once `beforeAll` has run). */
  readonly url: string;
  /** The cluster's masters, for clients of other libraries (usable once `beforeAll` has run). */
  readonly nodes: readonly { host: string; port: number }[];
  /** A key prefix no other test of any run uses: `<label>:<pid>:<time>:<n>:`. */
  freshPrefix(): string;
  /**
   * A new ioredis client of `deployment`, connected (it has answered a `PING`: a limiter's first calls
   * then meet no connection time within its timeout), as each instance of an app has its own; the
   * caller disconnects it.
   */
  ownClient(deployment: RedisDeployment): Promise<Redis | Cluster>;
}

/**
 * Starts a standalone Redis and a 3-master Cluster side by side (or uses `REDIS_URL` /
 * `REDIS_CLUSTER_NODES`). Either variable refused (see `refuseNonDisposableRedis`) is refused before
 * anything starts; when one start fails, the other is awaited and stopped before the error is thrown,
 * so a failed start leaves nothing running (a refusal used to reject while the Cluster went on
 * starting, and its nodes outlived the run).
 */
export async function startRedisDeployments(): Promise<{ server: RedisServerHandle; cluster: RedisClusterHandle }> {
  refuseNonDisposableRedis();
  const [server, cluster] = await Promise.allSettled([startRedisServer(), startRedisCluster()]);
  if (server.status === 'fulfilled' && cluster.status === 'fulfilled')
    return { server: server.value, cluster: cluster.value };
  await Promise.all([
    server.status === 'fulfilled' ? server.value.stop() : undefined,
    cluster.status === 'fulfilled' ? cluster.value.stop() : undefined,
  ]);
  throw server.status === 'rejected' ? server.reason : (cluster as PromiseRejectedResult).reason;
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
  beforeAll(async () => {
    ({ server, cluster } = await startRedisDeployments());
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
    get url() {
      if (!server) throw new Error('useRedisDeployments: the servers exist once beforeAll has run');
      return server.url;
    },
    get nodes() {
      if (!cluster) throw new Error('useRedisDeployments: the servers exist once beforeAll has run');
      return cluster.nodes;
    },
    freshPrefix: prefixes(label),
    async ownClient(deployment) {
      if (!server || !cluster) throw new Error('useRedisDeployments: the servers exist once beforeAll has run');
      const client = deployment === 'standalone' ? new Redis(server.url) : new Cluster([...cluster.nodes]);
      await client.ping();
      return client;
    },
  };
}
