export { ClusterStore, type ClusterStoreOptions } from './cluster-store.js';
export { serveClusterStore, type ClusterStoreServer, type ServeClusterStoreOptions } from './serve.js';
export { inProcessPair, processTransport, type HolderConnection, type WorkerTransport } from './transport.js';
export type { HolderCounts } from './holder.js';
export { WIRE_VERSION, VERBS } from './wire.js';
