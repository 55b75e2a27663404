import { StoreError } from '@rl/core/store';

/**
 * A worker's end of the way to the holder: the seam between `ClusterStore` and a channel (the IPC
 * channel of a `node:cluster` worker, a socket to a PM2 holder, an in-process pair in tests).
 * Messages are JSON text (see wire.ts); a channel delivers them in the order they were sent.
 */
export interface WorkerTransport {
  /**
   * Sends `text`; calls `sent` once: with no argument when the channel took it, with an error when it
   * cannot be sent (no channel, a closed one, a holder away). Never throws.
   */
  send(text: string, sent: (error?: Error) => void): void;
  /** Registers the one receiver of every message from the holder (a text, or anything else to ignore). */
  receive(listener: (message: unknown) => void): void;
  /**
   * Registers a listener told each time the channel (re)connects to a holder, after the first time:
   * notices of resets may have been missed while away (a holder that restarted).
   */
  reconnected?(listener: () => void): void;
  /**
   * Registers a listener told when the connection to the holder ends: the calls sent on it will not
   * be answered, and fail at once rather than at their timeout.
   */
  lost?(listener: () => void): void;
  /**
   * Told `true` when the store sends calls while none waited for an answer, `false` when the last one
   * waiting is settled: a channel that does not keep its process alive (the socket) keeps it alive
   * while calls wait, so that a script's last call is answered before it exits.
   */
  waiting?(calls: boolean): void;
  /** Stops listening (and closes a connection the transport owns). */
  close(): void;
}

/** The holder's end of one worker's channel. */
export interface HolderConnection {
  /** Sends `text` to the worker; a worker gone drops it (it has no call waiting). Never throws. */
  send(text: string): void;
}

/**
 * The transport of a `node:cluster` worker (or any process started with an IPC channel, a child
 * process forked by a holder of your own): `process.send` to the parent, its `'message'` events back.
 * Messages of others on the channel (not rl's text) are ignored.
 */
export function processTransport(): WorkerTransport {
  let listener: ((message: unknown) => void) | undefined;
  const onMessage = (message: unknown): void => listener?.(message);
  return {
    send(text, sent) {
      if (typeof process.send !== 'function' || !process.connected) {
        sent(
          new StoreError(
            'rl cluster store: this process has no IPC channel to its primary (it is not a cluster worker, or the primary is gone)',
          ),
        );
        return;
      }
      try {
        process.send(text, undefined, {}, (error: Error | null) => sent(error ?? undefined));
      } catch (error) {
        sent(error instanceof Error ? error : new Error(String(error)));
      }
    },
    receive(next) {
      if (listener === undefined) {
        // One listener per store (one per middleware is the documented use): each raises the process's
        // listener limit by its own, so eleven stores are no leak warning, and a real leak still is.
        adjustMaxListeners(1);
        process.on('message', onMessage);
      }
      listener = next;
    },
    close() {
      if (listener !== undefined) {
        process.off('message', onMessage);
        adjustMaxListeners(-1);
      }
      listener = undefined;
    },
  };
}

/** Moves the process's listener limit by `by`; a limit of 0 (none) stays none. */
function adjustMaxListeners(by: number): void {
  const limit = process.getMaxListeners();
  if (limit !== 0) process.setMaxListeners(limit + by);
}

/**
 * A worker's transport and the holder's connection joined in this process (tests, and one process
 * that both holds and decides): each message is delivered in a later turn (`setImmediate`), as a
 * channel between processes would, in order. `send` reports an error once either end is closed.
 */
export function inProcessPair(): {
  worker: WorkerTransport;
  holder: { connection: HolderConnection; receive(listener: (message: unknown) => void): void };
  /** Messages sent by the worker so far (the batching's count). */
  readonly sent: () => number;
} {
  let toWorker: ((message: unknown) => void) | undefined;
  let toHolder: ((message: unknown) => void) | undefined;
  let closed = false;
  let count = 0;
  return {
    worker: {
      send(text, sent) {
        if (closed) {
          sent(new StoreError('rl cluster store: the in-process channel is closed'));
          return;
        }
        count++;
        setImmediate(() => toHolder?.(text));
        sent();
      },
      receive(listener) {
        toWorker = listener;
      },
      close() {
        closed = true;
        toWorker = undefined;
      },
    },
    holder: {
      connection: {
        send(text) {
          if (!closed) setImmediate(() => toWorker?.(text));
        },
      },
      receive(listener) {
        toHolder = listener;
      },
    },
    sent: () => count,
  };
}
