/** The @rl/core conformance suite against a real standalone Redis and a real 3-master Redis Cluster. */
import { Cluster, Redis } from 'ioredis';
import type { Store } from '@rl/core';
import { runStoreConformance } from '@rl/core/testing';
import { RedisStore } from '@rl/store-redis';
import { startRedisCluster, startRedisServer } from '@rl/test-support';

/** The server (or cluster) behind each store, stopped with it. */
const servers = new WeakMap<Store, { stop(): Promise<void> }>();

async function closeStore(store: Store): Promise<void> {
  const redisStore = store as RedisStore;
  redisStore.close();
  redisStore.client.disconnect();
  await servers.get(store)?.stop();
}

runStoreConformance({
  name: 'RedisStore (standalone)',
  propertyRuns: 25,
  createStore: async () => {
    const server = await startRedisServer();
    const store = new RedisStore({ client: new Redis(server.url), prefix: `conformance:${process.pid}:` });
    servers.set(store, server);
    return store;
  },
  closeStore,
});

runStoreConformance({
  name: 'RedisStore (cluster of 3 masters)',
  propertyRuns: 25,
  createStore: async () => {
    const cluster = await startRedisCluster();
    const store = new RedisStore({ client: new Cluster(cluster.nodes), prefix: `conformance:${process.pid}:` });
    servers.set(store, cluster);
    return store;
  },
  closeStore,
});
