import { RedisStore } from '@rl/store-redis';
import { describeExampleApp, listenOnFreePort } from '@rl/test-support';
import { API_KEYS, DEMO_PASSWORD, LIMITS, createApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// describeExampleApp in @rl/test-support): this file only says how Koa starts the app.
describeExampleApp({
  name: 'koa',
  limits: LIMITS,
  apiKeys: API_KEYS,
  password: DEMO_PASSWORD,
  open: async (options) => listenOnFreePort(createApp(options)),
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
  readme: new URL('../README.md', import.meta.url),
});
