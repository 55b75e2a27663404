import { StoreError, unrefTimer, type Timers } from '@rl/core/store';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { HolderConnection, WorkerTransport } from './transport.js';

/** The longest line (one message) a socket end accepts: past it the peer is cut off, not buffered on. */
const MAX_LINE_BYTES = 64 * 1024 * 1024;
/** Waits between attempts to reach a holder that is away, ms: the first, and the longest. */
const FIRST_RETRY_MS = 50;
const LAST_RETRY_MS = 1_000;

/**
 * Calls `line` with each newline-terminated message read from `socket` (JSON text never holds a raw
 * newline); a peer that sends more than {@link MAX_LINE_BYTES} without one is cut off.
 */
export function readLines(socket: Socket, line: (text: string) => void): void {
  let buffer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let end = buffer.indexOf('\n');
    while (end >= 0) {
      const text = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      line(text);
      end = buffer.indexOf('\n');
    }
    if (buffer.length > MAX_LINE_BYTES) socket.destroy();
  });
}

/**
 * A worker's transport to a holder listening on the socket `path` (the PM2 layout: see the README).
 * Connects at once and again whenever the connection ends (after 50 ms, doubling up to 1 s): while
 * the holder is away a send fails at once, a store error the limiter's failure policy answers. The
 * socket is unref'd: the store never keeps a process alive.
 */
export function socketTransport(path: string, timers: Timers): WorkerTransport {
  let socket: Socket | undefined;
  let up = false;
  let everUp = false;
  let closed = false;
  let retryMs = FIRST_RETRY_MS;
  let receive: ((message: unknown) => void) | undefined;
  let reconnected: (() => void) | undefined;
  let lost: (() => void) | undefined;
  const open = (): void => {
    const s = connect(path);
    socket = s;
    s.unref();
    s.on('connect', () => {
      up = true;
      retryMs = FIRST_RETRY_MS;
      if (everUp) reconnected?.();
      everUp = true;
    });
    readLines(s, (text) => receive?.(text));
    s.on('error', () => {}); // followed by 'close'
    s.on('close', () => {
      up = false;
      socket = undefined;
      if (closed) return;
      lost?.();
      unrefTimer(timers.setTimeout(open, retryMs));
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    });
  };
  open();
  return {
    send(text, sent) {
      // Before the first connection the socket buffers the write; after one ended, the holder is away.
      if (socket === undefined || (!up && everUp)) {
        sent(new StoreError(`rl cluster store: the holder at ${path} is not reachable (is it running?)`));
        return;
      }
      socket.write(text + '\n');
      sent();
    },
    receive(listener) {
      receive = listener;
    },
    reconnected(listener) {
      reconnected = listener;
    },
    lost(listener) {
      lost = listener;
    },
    close() {
      closed = true;
      socket?.destroy();
    },
  };
}

/**
 * Listens on the socket `path` and hands each connected worker's messages to `holder`, which forgets it once gone. A stale
 * socket file (no holder answering on it) is removed first; a live one is an error: one holder per path.
 */
export async function listenOnSocket(
  path: string,
  holder: {
    handle(connection: HolderConnection, message: string): void;
    forget(connection: HolderConnection): void;
  },
): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    const connection: HolderConnection = {
      send(text) {
        if (!socket.destroyed) socket.write(text + '\n');
      },
    };
    sockets.add(socket);
    socket.on('error', () => {}); // a worker gone: followed by 'close'
    socket.on('close', () => {
      sockets.delete(socket);
      holder.forget(connection);
    });
    readLines(socket, (text) => holder.handle(connection, text));
  });
  await listen(server, path).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE' || (await answers(path))) throw error;
    const { rm } = await import('node:fs/promises');
    await rm(path, { force: true });
    await listen(server, path);
  });
  return {
    close() {
      // A server closes once its connections have: the workers' are ended here.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Whether something accepts connections on `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.on('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.on('error', () => resolve(false));
  });
}
