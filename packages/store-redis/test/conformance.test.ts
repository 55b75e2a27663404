/**
 * The @rl/core conformance suite against a real standalone Redis and a real 3-master Redis Cluster, on
 * every client the store takes (test/support/clients.ts): the full property runs on each family's
 * current major, fewer on the others. One server and one cluster for the file; each store has a
 * prefix of its own.
 */
import type { Store } from '@rl/core';
import { runStoreConformance } from '@rl/core/testing';
import { RedisStore } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { FULL, SMOKE, type ClientKind } from './support/clients.js';

const deployments = useRedisDeployments('conformance');

/** The client kind behind each store, which closes its client with it. */
const kinds = new WeakMap<Store, ClientKind>();

async function closeStore(store: Store): Promise<void> {
  const redisStore = store as RedisStore;
  redisStore.close();
  await kinds.get(store)?.close(redisStore.client);
}

for (const [kind, propertyRuns] of [...FULL.map((k) => [k, 25] as const), ...SMOKE.map((k) => [k, 3] as const)]) {
  for (const deployment of ['standalone', 'cluster of 3 masters'] as const) {
    runStoreConformance({
      name: `RedisStore (${deployment}, ${kind.name})`,
      propertyRuns,
      createStore: async () => {
        const client =
          deployment === 'standalone' ? await kind.standalone(deployments.url) : await kind.cluster(deployments.nodes);
        const store = new RedisStore({ client, prefix: deployments.freshPrefix() });
        kinds.set(store, kind);
        return store;
      },
      closeStore,
    });
  }
}
