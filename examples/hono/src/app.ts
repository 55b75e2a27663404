import { Hono, type Context, type Next } from 'hono';
import { concurrency, fixedWindow, tokenBucket, type Clock, type Duration, type Store } from '@rl/core';
import { rateLimit } from '@rl/hono';
import { MemoryStore } from '@rl/store-memory';
import { prometheusObserver } from '@rl/prometheus';
import { Registry } from 'prom-client';

/** The limits of this example, in one place (the README and the tests read them from here). */
export const LIMITS = {
  /** Every client IP: a token bucket of 20 tokens refilled at 10 per second. */
  perIp: { capacity: 20, refillRate: 10 },
  /** Each API key on /api: 10 requests per minute. */
  perApiKey: { limit: 10, window: '1m' },
  /** What GET /export costs from the per-IP bucket. */
  exportCost: 5,
  /** Requests to GET /slow in flight at once per client IP. */
  slowConcurrency: 2,
  /** POST /login: 5 failed attempts per 15 minutes per IP (successful ones are not counted), then a 1-hour block. */
  login: { limit: 5, window: '15m', block: '1h' },
} as const;

/** The password POST /login accepts (header `x-password`; a real app checks a hash). */
export const DEMO_PASSWORD = 'demo';

/**
 * This app's namespace in the store: on a Redis shared with other apps (the other examples among
 * them), its counts are its own. Each limit adds its name (`example-hono:login`); every instance of
 * this app uses the same names, so they share each limit.
 */
const PREFIX = 'example-hono';

/** The demo API keys accepted on /api (a real app looks them up). */
export const API_KEYS: ReadonlySet<string> = new Set(['key-alice', 'key-bob']);

export interface AppOptions {
  /** Where every limit keeps its state. Default: a new `MemoryStore`. */
  store?: Store;
  /** Time source of every limit. Default: the store's clock (Redis `TIME` on Redis). Tests pass a frozen clock. */
  clock?: Clock;
  /** Longest wait for a remote store before the failure policy (deny: 503) applies. Default: the library's (50 ms). */
  storeTimeout?: Duration;
  /** The work done by GET /slow. Default: wait `slowMs`. */
  slowWork?: () => Promise<void>;
  /** How long GET /slow takes by default (ms). Default 2000. */
  slowMs?: number;
}

/**
 * Builds the Hono app. It does not listen: `app.fetch` is served by `src/server.ts` (Node, through
 * `@hono/node-server`), `src/bun.ts` (`Bun.serve`) or `src/deno.ts` (`Deno.serve`); each passes the
 * client's address beside the request, where the default key finds it.
 */
export function createApp(options: AppOptions = {}): Hono {
  // Options every limit of this app shares.
  // The app's metrics, served on GET /metrics (one registry per app).
  const registry = new Registry();
  const shared = {
    store: options.store ?? new MemoryStore(),
    observer: prometheusObserver({ registry }),
    ...(options.clock && { clock: options.clock }),
    ...(options.storeTimeout !== undefined && { timeout: options.storeTimeout }),
  };
  const slowMs = options.slowMs ?? 2000;
  const slowWork = options.slowWork ?? (() => new Promise<void>((resolve) => setTimeout(resolve, slowMs)));

  const app = new Hono();

  // Prometheus scrapes here, unlimited: registered before the limits, it answers without calling them.
  app.get('/metrics', async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }));

  // 1. Global: one token bucket per client IP (the default key). GET /export costs 5 tokens, the rest 1.
  app.use(
    rateLimit({
      algorithm: tokenBucket(LIMITS.perIp),
      ...shared,
      prefix: `${PREFIX}:per-ip`,
      cost: (c: Context) => (c.req.path === '/export' ? LIMITS.exportCost : 1),
    }),
  );

  app.get('/', (c) => c.json({ hello: 'world', remaining: c.get('rateLimit')?.remaining }));

  // 2. /export is expensive: it takes 5 tokens of the caller's bucket (see `cost` above).
  app.get('/export', (c) => c.json({ export: 'ok', rows: 1000 }));

  // 3. At most 2 requests to /slow in flight per IP; the permit comes back when the response ends.
  app.get(
    '/slow',
    rateLimit({
      algorithm: concurrency({ limit: LIMITS.slowConcurrency, lease: '30s' }),
      ...shared,
      prefix: `${PREFIX}:slow`,
    }),
    async (c) => {
      await slowWork();
      return c.json({ slow: 'done' });
    },
  );

  // 4. /api needs an API key (x-api-key) and allows 10 requests per minute per key, whatever the IP.
  const perApiKey = rateLimit({
    algorithm: fixedWindow(LIMITS.perApiKey),
    ...shared,
    prefix: `${PREFIX}:api-key`,
    key: (c: Context) => `api-key:${c.req.header('x-api-key')}`,
  });
  app.get('/api/items', requireApiKey, perApiKey, (c) =>
    c.json({ items: ['a', 'b', 'c'], apiKey: c.req.header('x-api-key') }),
  );

  // 5. Brute-force protection: only failed logins count (a 401), and the 5th in 15 minutes blocks the IP
  //    for an hour, in the store, so every instance sees it. The password comes in `x-password`.
  const login = rateLimit({
    algorithm: fixedWindow({ limit: LIMITS.login.limit, window: LIMITS.login.window }),
    ...shared,
    prefix: `${PREFIX}:login`,
    skipSuccessfulRequests: true,
    blockDuration: LIMITS.login.block,
  });
  app.post('/login', login, (c) => {
    const ok = c.req.header('x-password') === DEMO_PASSWORD;
    return c.json({ login: ok ? 'ok' : 'wrong password' }, ok ? 200 : 401);
  });

  return app;
}

async function requireApiKey(c: Context, next: Next): Promise<Response | void> {
  const apiKey = c.req.header('x-api-key');
  if (apiKey && API_KEYS.has(apiKey)) return next();
  const problem = { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Send a valid x-api-key header.' };
  return c.body(JSON.stringify(problem), 401, { 'Content-Type': 'application/problem+json' });
}
