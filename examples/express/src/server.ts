import type { AddressInfo } from 'node:net';
import type { Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import { Redis } from 'ioredis';
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
const redisUrl = process.env.REDIS_URL;

// Memory store by default; Redis (shared by every instance of the app) when REDIS_URL is set.
let redis: Redis | undefined;
let store: Store;
if (redisUrl) {
  redis = new Redis(redisUrl);
  // ioredis retries forever while Redis is unreachable: say each new error once, not at every retry.
  let lastError = '';
  redis.on('error', (error: Error) => {
    if (error.message !== lastError) console.error(`redis: ${error.message}`);
    lastError = error.message;
  });
  redis.on('ready', () => (lastError = ''));
  store = new RedisStore({ client: redis });
} else {
  store = new MemoryStore();
}

const app = createApp({ store });
// Express 5 calls back with the error when the server cannot listen (EADDRINUSE, …).
const server = app.listen(port, host, (error?: Error) => {
  if (error) cannotListen(error);
  const { port: actual } = server.address() as AddressInfo;
  console.log(`rl express example listening on http://${host}:${actual} (store: ${redisUrl ? 'redis' : 'memory'})`);
});

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
  await store.close?.();
  if (redis) await closeRedis(redis);
  console.log('closed');
  process.exit(0);
}

/**
 * Closes the Redis client without waiting for a server that is not there: QUIT when connected (the
 * replies in flight arrive first), otherwise a disconnect, which also stops the reconnect attempts
 * (a QUIT would wait in the offline queue until Redis comes back).
 */
async function closeRedis(client: Redis): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}

/** The server could not listen (the port is in use, or the host is not this machine's): say so and exit 1. */
function cannotListen(error: NodeJS.ErrnoException): never {
  const hint =
    error.code === 'EADDRINUSE'
      ? ': the port is in use (stop the other server, or choose another port with PORT=…)'
      : '';
  console.error(`rl express example cannot listen on ${host}:${port}: ${error.code ?? error.message}${hint}`);
  redis?.disconnect();
  process.exit(1);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
