/**
 * The example on Deno: `deno run --allow-net --allow-env --allow-read --allow-sys src/deno.ts` (see the
 * README for the flags). The same app, limits and store as `src/server.ts`, served by `Deno.serve`,
 * which passes the connection's info beside each request: the default key reads the client's address
 * from it (`info.remoteAddr`).
 */
// Deno resolves a module by its file's own name (tsx and Bun map './app.js' to app.ts; Deno does not).
import { createApp } from './app.ts';
import { openStore } from './store.ts';

/** The part of Deno's global this file uses (the workspace installs no Deno types). */
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen(address: { port: number }): void },
    handler: (request: Request, info: unknown) => Response | Promise<Response>,
  ): { shutdown(): Promise<void> };
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', listener: () => void): void;
  exit(code: number): never;
};

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';

// Memory store by default; Redis (shared by every instance of the app) when REDIS_URL is set.
const opened = openStore(process.env.REDIS_URL);
const app = createApp({ store: opened.store });

let server: ReturnType<typeof Deno.serve>;
try {
  server = Deno.serve(
    {
      port,
      hostname: host,
      onListen: ({ port: actual }) =>
        console.log(`rl hono example (Deno) listening on http://${host}:${actual} (store: ${opened.kind})`),
    },
    app.fetch,
  );
} catch (error) {
  // Deno.serve throws when it cannot listen (AddrInUse, …).
  const name = (error as Error).name;
  const hint =
    name === 'AddrInUse' ? ': the port is in use (stop the other server, or choose another port with PORT=…)' : '';
  console.error(
    `rl hono example cannot listen on ${host}:${port}: ${name === 'AddrInUse' ? 'EADDRINUSE' : (error as Error).message}${hint}`,
  );
  opened.disconnect();
  Deno.exit(1);
}

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  console.log(`${signal}: shutting down`);
  // Never hang: exit anyway after 5 s.
  setTimeout(() => Deno.exit(1), 5000);
  await server.shutdown();
  await opened.close();
  console.log('closed');
  Deno.exit(0);
}
Deno.addSignalListener('SIGINT', () => void shutdown('SIGINT'));
Deno.addSignalListener('SIGTERM', () => void shutdown('SIGTERM'));
