/**
 * The example on Bun: `bun src/bun.ts` (Bun runs TypeScript as it is). The same app, limits and store
 * as `src/server.ts`, served by `Bun.serve`, which passes itself beside each request: the default key
 * reads the client's address from it (`server.requestIP`).
 */
import { createApp } from './app.js';
import { openStore } from './store.js';

/** The part of Bun's global this file uses (the workspace installs no Bun types). */
declare const Bun: {
  serve(options: {
    port: number;
    hostname: string;
    fetch: (request: Request, server: unknown) => Response | Promise<Response>;
  }): {
    readonly port: number;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
};

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';

// Memory store by default; Redis (shared by every instance of the app) when REDIS_URL is set.
const opened = openStore(process.env.REDIS_URL);
const app = createApp({ store: opened.store });

let server: ReturnType<typeof Bun.serve>;
try {
  server = Bun.serve({ port, hostname: host, fetch: app.fetch });
} catch (error) {
  // Bun.serve throws when it cannot listen (EADDRINUSE, …).
  const code = (error as NodeJS.ErrnoException).code;
  const hint =
    code === 'EADDRINUSE' ? ': the port is in use (stop the other server, or choose another port with PORT=…)' : '';
  console.error(`rl hono example cannot listen on ${host}:${port}: ${code ?? (error as Error).message}${hint}`);
  opened.disconnect();
  process.exit(1);
}
console.log(`rl hono example (Bun) listening on http://${host}:${server.port} (store: ${opened.kind})`);

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  console.log(`${signal}: shutting down`);
  // Never hang: exit anyway after 5 s.
  setTimeout(() => process.exit(1), 5000).unref();
  await server.stop();
  await opened.close();
  console.log('closed');
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
