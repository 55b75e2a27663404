import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createLimiter, tokenBucket, type Store } from '@rl/core';
import { idempotencyKeyHeader, rateLimit } from '@rl/express';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import { useRedis } from '@rl/test-support';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { createFetch } from '../src/index.js';
import { startDroppingProxy } from './dropping-proxy.js';

const redis = useRedis('rl-client-charged-once');
const algorithm = tokenBucket({ capacity: 1000, refillRate: 1, interval: '1h' });

/** An rl Express server that charges each POST /orders one unit of the key `team`, its retries once (idempotencyKey). */
async function startServer(store: Store, idempotent: boolean): Promise<Server> {
  const app = express();
  app.use(
    rateLimit({
      algorithm,
      store,
      prefix: 'orders',
      key: () => 'team',
      idempotencyKey: idempotent ? idempotencyKeyHeader : undefined,
    }),
  );
  app.post('/orders', (_req, res) => {
    res.status(201).json({ ok: true });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return server;
}

describe('charged once: 200 POSTs through a proxy that drops 30 % of the responses', () => {
  it.each([
    ['memory store', true, () => new MemoryStore({ sweepInterval: false })],
    ['Redis store', true, () => new RedisStore({ client: redis.client, prefix: redis.freshPrefix() })],
    [
      'memory store, the server without idempotencyKey (the control)',
      false,
      () => new MemoryStore({ sweepInterval: false }),
    ],
  ])("%s: 200 POSTs with idempotencyKey: 'auto', the units charged", async (_name, idempotent, makeStore) => {
    const store = makeStore();
    const server = await startServer(store, idempotent);
    const proxy = await startDroppingProxy(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 0.3, 40);
    try {
      const client = createFetch({ idempotencyKey: 'auto', retries: 10, backoff: '5ms', jitter: 0 });
      const statuses: number[] = [];
      for (let batch = 0; batch < 20; batch++) {
        const answers = await Promise.all(
          Array.from({ length: 10 }, () => client(`${proxy.url}/orders`, { method: 'POST', body: '{"item":1}' })),
        );
        statuses.push(...answers.map((r) => r.status));
      }
      expect(statuses.filter((s) => s === 201)).toHaveLength(200);
      expect(proxy.dropped()).toBeGreaterThan(40); // about 30 % of the requests forwarded
      const units =
        1000 - Math.ceil((await createLimiter({ algorithm, store, prefix: 'orders' }).peek('team')).remaining);
      // Each dropped response was charged, and its retry too unless the server replays it.
      expect(units).toBe(idempotent ? 200 : 200 + proxy.dropped());
    } finally {
      await proxy.close();
      await new Promise((resolve) => server.close(resolve));
      await store.close?.();
    }
  });
});
