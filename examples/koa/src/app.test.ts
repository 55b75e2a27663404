import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeExampleApp } from '../../test-support/app-suite.js';
import { API_KEYS, LIMITS, createApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// examples/test-support/app-suite.ts): this file only says how Koa starts and closes the app.
describeExampleApp({
  name: 'koa',
  limits: LIMITS,
  apiKeys: API_KEYS,
  async open(options) {
    const app = createApp(options);
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      async close() {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  },
});
