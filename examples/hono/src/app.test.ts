import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { RedisStore } from '@rl/store-redis';
import { describeExampleApp } from '@rl/test-support';
import { API_KEYS, DEMO_PASSWORD, LIMITS, createApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// describeExampleApp in @rl/test-support): this file only says how Hono starts (on @hono/node-server) and closes the app.
describeExampleApp({
  name: 'hono',
  limits: LIMITS,
  apiKeys: API_KEYS,
  password: DEMO_PASSWORD,
  async open(options) {
    const app = createApp(options);
    const server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
    });
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      async close() {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  },
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
  readme: new URL('../README.md', import.meta.url),
});
