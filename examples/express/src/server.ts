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
  redis.on('error', (error: Error) => console.error(`redis: ${error.message}`));
  store = new RedisStore({ client: redis });
} else {
  store = new MemoryStore();
}

const app = createApp({ store });
const server = app.listen(port, host, () => {
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
  await redis?.quit();
  console.log('closed');
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
