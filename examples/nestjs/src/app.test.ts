import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RedisStore } from '@rl/store-redis';
import { describeExampleApp } from '@rl/test-support';
import { API_KEYS, DEMO_PASSWORD, LIMITS, createApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// describeExampleApp in @rl/test-support): this file only says how Nest starts and closes the app.
describeExampleApp({
  name: 'nestjs',
  limits: LIMITS,
  apiKeys: API_KEYS,
  password: DEMO_PASSWORD,
  async open(options) {
    const app = await createApp(options);
    await app.listen(0, '127.0.0.1');
    const server = app.getHttpServer() as Server;
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      async close() {
        server.closeAllConnections();
        await app.close();
      },
    };
  },
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
  readme: new URL('../README.md', import.meta.url),
});
