import { RedisStore } from '@rl/store-redis';
import { describeExampleApp } from '@rl/test-support';
import { API_KEYS, DEMO_PASSWORD, LIMITS, buildApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// describeExampleApp in @rl/test-support): this file only says how Fastify starts and closes the app.
describeExampleApp({
  name: 'fastify',
  limits: LIMITS,
  apiKeys: API_KEYS,
  password: DEMO_PASSWORD,
  async open(options) {
    const app = await buildApp(options);
    return {
      url: await app.listen({ port: 0, host: '127.0.0.1' }),
      async close() {
        app.server.closeAllConnections();
        await app.close();
      },
    };
  },
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
  readme: new URL('../README.md', import.meta.url),
});
