import {
  checkOptions,
  checkTimers,
  InvalidOptionError,
  parseTimerDuration,
  systemTimers,
  type Duration,
  type Timers,
} from '@rl/core/store';
import nodeCluster from 'node:cluster';
import { checkSocketPath, socketTransport } from './socket.js';
import { processTransport, type WorkerTransport } from './transport.js';

/** Options of `ClusterStore`. */
export interface ClusterStoreOptions {
  /**
   * The path of a holder's socket (`serveClusterStore({ socket })`): a Unix socket, or on Windows a
   * named pipe (`\\\\.\\pipe\\name`). For PM2, whose instances have no primary of yours: the holder is
   * a process of its own (see the README). Absent: the IPC channel to the `node:cluster` primary.
   */
  socket?: string;
  /** A transport of your own (see `WorkerTransport`); not with `socket`. */
  transport?: WorkerTransport;
  /**
   * The longest a call waits for the holder's answer (default `'2s'`): then it fails with a
   * `StoreError`, and the limiter's failure policy answers (its own `timeout`, shorter, answers first).
   */
  timeout?: Duration;
  /** The most calls in one message (default 1,024): a turn with more sends several. */
  maxBatch?: number;
  /** Where the timeouts' timers come from (default: Node's; tests pass `FakeTimers` from `@rl/core/simulation`). */
  timers?: Timers;
}

/** The options of `ClusterStore`, checked: each `InvalidOptionError` names the option to fix. */
export function parseClusterStoreOptions(options: ClusterStoreOptions): {
  transport: WorkerTransport;
  timeoutMs: number;
  maxBatch: number;
  timers: Timers;
} {
  const o = checkOptions(options, ['socket', 'transport', 'timeout', 'maxBatch', 'timers'], 'ClusterStore');
  if (o.socket !== undefined) checkSocketPath(o.socket, 'ClusterStore.socket');
  if (o.socket !== undefined && o.transport !== undefined)
    throw new InvalidOptionError(
      'ClusterStore.transport',
      o.transport,
      'absent when `socket` is given (one way to the holder)',
    );
  const transport = o.transport as WorkerTransport | undefined;
  if (
    transport !== undefined &&
    (typeof transport !== 'object' ||
      transport === null ||
      typeof transport.send !== 'function' ||
      typeof transport.receive !== 'function' ||
      typeof transport.close !== 'function')
  )
    throw new InvalidOptionError('ClusterStore.transport', transport, 'a WorkerTransport: send, receive and close');
  const timeoutMs = o.timeout === undefined ? 2_000 : parseTimerDuration(o.timeout, 'ClusterStore.timeout');
  const maxBatch = o.maxBatch === undefined ? 1_024 : o.maxBatch;
  if (typeof maxBatch !== 'number' || !Number.isInteger(maxBatch) || maxBatch < 1)
    throw new InvalidOptionError('ClusterStore.maxBatch', maxBatch, 'an integer of at least 1');
  const timers = o.timers === undefined ? systemTimers : checkTimers(o.timers, 'ClusterStore.timers');
  // Checked after the values given: a bad option is named before what this process lacks.
  if (o.socket === undefined && transport === undefined) {
    // The default is the IPC channel of a node:cluster worker to a primary of yours: say so at once
    // where there is none. Under PM2's cluster mode the primary is PM2's own; in its fork mode the
    // channel of a process that is no worker goes to PM2's daemon (a node:cluster app's workers, whose
    // primary is the app's, inherit PM2's variables and are served). A child of `fork()` has a channel
    // too, to a parent that serves no store.
    const underPm2 = process.env.pm_id !== undefined;
    if (underPm2 && (process.env.exec_mode === 'cluster_mode' || !nodeCluster.isWorker))
      throw new InvalidOptionError(
        'ClusterStore.socket',
        undefined,
        'the socket path of a holder app under PM2 (its primary, or this process’s IPC channel, is PM2’s own): serveClusterStore({ socket }) in a PM2 app in fork mode, new ClusterStore({ socket }) in the instances',
      );
    if (!nodeCluster.isWorker || typeof process.send !== 'function')
      throw new InvalidOptionError(
        'ClusterStore.socket',
        undefined,
        'given outside a node:cluster worker (this process is no worker of a primary that serves the store): create ClusterStore() in the workers, serveClusterStore() in the primary, or give the socket of a holder',
      );
  }
  return {
    transport: transport ?? (typeof o.socket === 'string' ? socketTransport(o.socket, timers) : processTransport()),
    timeoutMs,
    maxBatch,
    timers,
  };
}
