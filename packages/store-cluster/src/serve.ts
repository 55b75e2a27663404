import { checkOptions, InvalidOptionError } from '@rl/core/store';
import { MemoryStore } from '@rl/store-memory';
import nodeCluster, { type Worker } from 'node:cluster';
import { Holder, type HolderCounts } from './holder.js';
import { checkSocketPath, listenOnSocket } from './socket.js';
import type { HolderConnection } from './transport.js';

/** Options of {@link serveClusterStore}. */
export interface ServeClusterStoreOptions {
  /** The memory store that holds the state (default: a new `MemoryStore()`; pass one for its `maxKeys` or clock). */
  store?: MemoryStore;
  /**
   * Answer the `node:cluster` workers of this process (default: true when this process is the cluster
   * primary and no `socket` is given): their `ClusterStore()` talks over the IPC channel.
   */
  cluster?: boolean;
  /**
   * Listen on this socket path (a Unix socket, a Windows named pipe) for workers whose
   * `ClusterStore({ socket })` names it: the PM2 layout, where the holder is a process of its own.
   */
  socket?: string;
}

/** A running holder: see {@link serveClusterStore}. */
export interface ClusterStoreServer {
  /** The store that holds the state. */
  readonly store: MemoryStore;
  /** Messages answered, calls in them, and messages refused (not rl's, or unreadable). */
  readonly counts: Readonly<HolderCounts>;
  /** Resolves once the socket listens (at once without one); rejects when it cannot (another holder on the path). */
  readonly listening: Promise<void>;
  /** Answers the messages `receive` hands over, on `connection` (an in-process pair's holder end, a transport of your own). */
  connect(end: { connection: HolderConnection; receive(listener: (message: unknown) => void): void }): void;
  /** Stops answering (workers' calls then fail as store errors), closes the socket, and the store when it made it. */
  close(): Promise<void>;
}

/**
 * Holds the shared state for the workers' `ClusterStore`s and answers them, in the process that
 * runs it: the `node:cluster` primary (its workers, over their IPC channels), or a holder process
 * of its own listening on a socket (PM2). Messages that are not rl's are left to your own listeners.
 */
export function serveClusterStore(options: ServeClusterStoreOptions = {}): ClusterStoreServer {
  const o = checkOptions(options, ['store', 'cluster', 'socket'], 'serveClusterStore');
  if (o.store !== undefined && !(o.store instanceof MemoryStore))
    throw new InvalidOptionError('serveClusterStore.store', o.store, 'a MemoryStore from @rl/store-memory');
  if (o.socket !== undefined) checkSocketPath(o.socket, 'serveClusterStore.socket');
  if (o.cluster !== undefined && typeof o.cluster !== 'boolean')
    throw new InvalidOptionError('serveClusterStore.cluster', o.cluster, 'true or false');
  const socket = o.socket as string | undefined;
  const cluster = (o.cluster as boolean | undefined) ?? (socket === undefined && nodeCluster.isPrimary);
  const ownStore = o.store === undefined;
  const store = (o.store as MemoryStore | undefined) ?? new MemoryStore();
  const holder = new Holder(store);

  const connections = new Map<Worker, HolderConnection>();
  const onMessage = (worker: Worker, message: unknown): void => {
    let connection = connections.get(worker);
    if (connection === undefined) {
      connection = {
        send(text) {
          if (!worker.isConnected()) return;
          try {
            worker.send(text, undefined, undefined, () => {}); // a worker gone: its calls are gone with it
          } catch {
            // The channel closed between the check and the send.
          }
        },
      };
      connections.set(worker, connection);
    }
    holder.handle(connection, message);
  };
  const onExit = (worker: Worker): void => {
    const connection = connections.get(worker);
    if (connection === undefined) return;
    connections.delete(worker);
    holder.forget(connection);
  };
  if (cluster) {
    nodeCluster.on('message', onMessage);
    nodeCluster.on('exit', onExit);
  }
  let server: { close(): Promise<void> } | undefined;
  const listening =
    socket === undefined
      ? Promise.resolve()
      : listenOnSocket(socket, holder).then((s) => {
          server = s;
        });
  listening.catch(() => {}); // read through `listening`
  return {
    store,
    counts: holder.counts,
    listening,
    connect(end) {
      end.receive((message) => holder.handle(end.connection, message));
    },
    async close() {
      if (cluster) {
        nodeCluster.off('message', onMessage);
        nodeCluster.off('exit', onExit);
      }
      await listening.catch(() => {});
      await server?.close();
      if (ownStore) store.close();
    },
  };
}
