import { runStoreConformance } from '@rl/core/testing';
import { ClusterStore } from './cluster-store.js';
import { serveClusterStore, type ClusterStoreServer } from './serve.js';
import { inProcessPair } from './transport.js';

// Worker and holder in one process, over the in-process pair: every call crosses the wire (JSON text,
// batched per turn) as between processes. The real node:cluster run is node-cluster.test.ts.
const servers = new WeakMap<ClusterStore, ClusterStoreServer>();

runStoreConformance({
  name: 'ClusterStore (in-process pair)',
  createStore: () => {
    const pair = inProcessPair();
    const server = serveClusterStore({ cluster: false });
    server.connect(pair.holder);
    const store = new ClusterStore({ transport: pair.worker });
    servers.set(store, server);
    return store;
  },
  closeStore: async (store) => {
    (store as ClusterStore).close();
    await servers.get(store as ClusterStore)?.close();
  },
});
