import { describeExampleApp } from '../../test-support/app-suite.js';
import { API_KEYS, LIMITS, buildApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// examples/test-support/app-suite.ts): this file only says how Fastify starts and closes the app.
describeExampleApp({
  name: 'fastify',
  limits: LIMITS,
  apiKeys: API_KEYS,
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
});
