/**
 * The Express app of pm2.test.ts, run by PM2 in cluster mode: one limit of `RL_LIMIT` requests an
 * hour for every client, shared by all instances through the holder on `RL_SOCKET`.
 */
import express from 'express';
import { fixedWindow } from '@rl/core';
import { rateLimit } from '@rl/express';
import { ClusterStore } from '../../src/index.js';

const store = new ClusterStore({ socket: process.env.RL_SOCKET! });
const app = express();
app.get('/health', (_req, res) => {
  res.json({ pid: process.pid });
});
app.use(
  rateLimit({
    algorithm: fixedWindow({ limit: Number(process.env.RL_LIMIT), window: '1h' }),
    store,
    key: () => 'everyone',
    timeout: '5s',
    denyCache: false,
  }),
);
app.get('/', (_req, res) => {
  res.json({ pid: process.pid });
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGINT', () => {
  store.close();
  server.close(() => process.exit(0));
});
