import { InvalidOptionError, StoreError, unrefTimer, type TimerHandle, type Timers } from '@rl/core/store';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { HolderConnection, WorkerTransport } from './transport.js';

/** The longest line (one message) a socket end accepts, in UTF-16 code units: past it the peer is cut off, not buffered on. */
const MAX_LINE_LENGTH = 64 * 1024 * 1024;
/** Waits between attempts to reach a holder that is away, ms: the first, and the longest. */
const FIRST_RETRY_MS = 50;
const LAST_RETRY_MS = 1_000;

/**
 * The longest socket path a Unix system binds whole, in bytes (`sun_path` less its terminating NUL):
 * a longer one would be cut short, and two long paths could name one socket.
 */
const MAX_SOCKET_PATH_BYTES = process.platform === 'darwin' ? 103 : 107;

/** Throws an `InvalidOptionError` naming `field` unless `path` is a socket path this system can bind whole. */
export function checkSocketPath(path: unknown, field: string): void {
  if (typeof path !== 'string' || path === '')
    throw new InvalidOptionError(field, path, 'the path of a Unix socket (or, on Windows, a named pipe)');
  if (process.platform === 'win32') return; // a named pipe: no such bound
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES)
    throw new InvalidOptionError(
      field,
      path,
      `a socket path of at most ${MAX_SOCKET_PATH_BYTES} bytes, this system's bound (this one has ${bytes}): a shorter directory, such as one under /tmp`,
    );
}

/**
 * Calls `line` with each newline-terminated message read from `socket` (JSON text never holds a raw
 * newline); a peer that sends more than {@link MAX_LINE_LENGTH} without one is cut off. Each chunk is
 * searched once, when it arrives: a message of many chunks costs its length, not its length squared.
 */
export function readLines(socket: Socket, line: (text: string) => void): void {
  let parts: string[] = [];
  let length = 0;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    let start = 0;
    let end = chunk.indexOf('\n');
    while (end >= 0) {
      const tail = chunk.slice(start, end);
      const text = parts.length === 0 ? tail : parts.join('') + tail;
      parts = [];
      length = 0;
      line(text);
      start = end + 1;
      end = chunk.indexOf('\n', start);
    }
    if (start === chunk.length) return;
    parts.push(start === 0 ? chunk : chunk.slice(start));
    length += chunk.length - start;
    if (length > MAX_LINE_LENGTH) {
      parts = [];
      socket.destroy();
    }
  });
}

/**
 * A worker's transport to a holder listening on the socket `path` (the PM2 layout: see the README).
 * Connects at once and again whenever the connection ends (after 50 ms, doubling up to 1 s): while
 * the holder is away a send fails at once, a store error the limiter's failure policy answers. The
 * socket keeps the process alive only while calls wait for their answers (see `waiting`): an idle
 * store never does, and a script's last call is answered before it exits.
 */
export function socketTransport(path: string, timers: Timers): WorkerTransport {
  let socket: Socket | undefined;
  let up = false;
  let everUp = false;
  let closed = false;
  let calls = false;
  let retry: TimerHandle | undefined;
  let retryMs = FIRST_RETRY_MS;
  let receive: ((message: unknown) => void) | undefined;
  let reconnected: (() => void) | undefined;
  let lost: (() => void) | undefined;
  const open = (): void => {
    retry = undefined;
    if (closed) return;
    const s = connect(path);
    socket = s;
    if (!calls) s.unref();
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
      retry = unrefTimer(timers.setTimeout(open, retryMs));
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
    waiting(waiting) {
      calls = waiting;
      if (waiting) socket?.ref();
      else socket?.unref();
    },
    close() {
      closed = true;
      if (retry !== undefined) timers.clearTimeout(retry);
      retry = undefined;
      socket?.destroy();
    },
  };
}

/**
 * Listens on the socket `path` and hands each connected worker's messages to `holder`, which forgets
 * it once gone. A stale socket (one no holder answers on, left by a holder that was killed) is removed
 * first; a live one is an error (one holder per path), and so is a path that holds anything but a
 * socket (a file is never removed).
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
    const { lstat, rm } = await import('node:fs/promises');
    const found = await lstat(path).catch(() => undefined);
    if (process.platform !== 'win32' && found !== undefined && !found.isSocket())
      throw new InvalidOptionError(
        'serveClusterStore.socket',
        path,
        'a path where a socket can be made: this one holds a file, which a holder never removes',
      );
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

/**
 * Listens on `path`, exclusively: in a node:cluster worker (a PM2 instance in cluster mode too) a
 * listen is otherwise routed through the primary, which shares one handle between the workers, and a
 * second holder on the path would listen beside the first instead of meeting `EADDRINUSE`.
 */
function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ path, exclusive: true }, () => {
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
