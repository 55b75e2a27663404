import { describeExampleApp, listenOnFreePort } from '../../test-support/app-suite.js';
import { API_KEYS, LIMITS, createApp } from './app.js';

// The tests of the app, on the memory store and on Redis, are shared by every example (see
// examples/test-support/app-suite.ts): this file only says how Express starts the app.
describeExampleApp({
  name: 'express',
  limits: LIMITS,
  apiKeys: API_KEYS,
  open: async (options) => listenOnFreePort(createApp(options)),
});
