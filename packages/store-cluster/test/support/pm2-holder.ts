/** The holder process of pm2.test.ts (a PM2 app in fork mode): serves the cluster store on `RL_SOCKET`. */
import { serveClusterStore } from '../../src/index.js';

const server = serveClusterStore({ socket: process.env.RL_SOCKET! });
await server.listening;
process.on('SIGINT', () => {
  void server.close().then(() => process.exit(0));
});
