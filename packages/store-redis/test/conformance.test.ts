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
  (redisStore.client as Redis | Cluster).disconnect();
  await servers.get(store)?.stop();
}

/** Each deployment: a name for the tests, and how to start its server(s) and connect a client. */
const deployments = [
  {
    name: 'RedisStore (standalone)',
    start: async () => {
      const server = await startRedisServer();
      return { server, client: new Redis(server.url) };
    },
  },
  {
    name: 'RedisStore (cluster of 3 masters)',
    start: async () => {
      const cluster = await startRedisCluster();
      return { server: cluster, client: new Cluster(cluster.nodes) };
    },
  },
];

for (const { name, start } of deployments) {
  runStoreConformance({
    name,
    propertyRuns: 25,
    createStore: async () => {
      const { server, client } = await start();
      const store = new RedisStore({ client, prefix: `conformance:${process.pid}:` });
      servers.set(store, server);
      return store;
    },
    closeStore,
  });
}
