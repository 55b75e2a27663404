import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { createApp } from './app.js';
import { openStore } from './store.js';

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';

// Memory store by default; Redis (shared by every instance of the app) when REDIS_URL is set.
const opened = openStore(process.env.REDIS_URL);

const app = createApp({ store: opened.store });
// @hono/node-server passes the Node request beside the Fetch one: the default key reads its socket's address.
const server = serve({ fetch: app.fetch, port, hostname: host }, ({ port: actual }) => {
  console.log(`rl hono example listening on http://${host}:${actual} (store: ${opened.kind})`);
}) as Server;
// serve() calls Node's listen: a port in use (EADDRINUSE, …) is an 'error' event.
server.once('error', cannotListen);

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  console.log(`${signal}: shutting down`);
  // Never hang: exit anyway after 5 s.
  setTimeout(() => process.exit(1), 5000).unref();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  await opened.close();
  console.log('closed');
  process.exit(0);
}

/** The server could not listen (the port is in use, or the host is not this machine's): say so and exit 1. */
function cannotListen(error: NodeJS.ErrnoException): never {
  const hint =
    error.code === 'EADDRINUSE'
      ? ': the port is in use (stop the other server, or choose another port with PORT=…)'
      : '';
  console.error(`rl hono example cannot listen on ${host}:${port}: ${error.code ?? error.message}${hint}`);
  opened.disconnect();
  process.exit(1);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
