import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { concurrency, fixedWindow, tokenBucket, type Clock, type Duration, type Store } from '@rl/core';
import rateLimit from '@rl/fastify';
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
 * them), its counts are its own. Every instance of this app uses the same, so they share each limit.
 */
const PREFIX = 'example-fastify';

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
  /** Fastify's logger option. Default false. */
  logger?: boolean;
}

/** Builds the Fastify app (ready, not listening): see `server.ts`, or use `app.inject()` / `app.listen({ port: 0 })` in a test. */
export async function buildApp(options: AppOptions = {}): Promise<FastifyInstance> {
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

  const app = Fastify({ logger: options.logger ?? false });

  // 1. Global: one token bucket per client IP (the default key), for every route. Its state lives under
  //    `rl-example:<policy name>`, so that the routes below with several limits share this very bucket.
  const perIp = tokenBucket(LIMITS.perIp);
  await app.register(rateLimit, { algorithm: perIp, prefix: `${PREFIX}:${perIp.policy.name}`, ...shared });

  app.get('/', async (request) => ({ hello: 'world', remaining: request.rateLimit?.remaining }));

  // Prometheus scrapes here, unlimited.
  app.get('/metrics', { config: { rateLimit: false } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );

  // 2. /export is expensive: it takes 5 tokens of the caller's bucket (route config merged over the plugin's).
  app.get('/export', { config: { rateLimit: { cost: LIMITS.exportCost } } }, async () => ({
    export: 'ok',
    rows: 1000,
  }));

  // 3. At most 2 requests to /slow in flight per IP. A route's `limits` replace the plugin's limit for
  //    that route, so the per-IP bucket is listed again (same prefix and name: the same state).
  app.get(
    '/slow',
    {
      config: {
        rateLimit: {
          prefix: PREFIX,
          limits: [{ algorithm: perIp }, { algorithm: concurrency({ limit: LIMITS.slowConcurrency, lease: '30s' }) }],
        },
      },
    },
    async () => {
      await slowWork();
      return { slow: 'done' };
    },
  );

  // 4. /api needs an API key (x-api-key, checked onRequest) and allows 10 requests per minute per key,
  //    whatever the IP. The limits run in preHandler, after the key check: a 401 counts nowhere.
  app.get(
    '/api/items',
    {
      onRequest: requireApiKey,
      config: {
        rateLimit: {
          prefix: PREFIX,
          hook: 'preHandler',
          limits: [
            { algorithm: perIp },
            {
              algorithm: fixedWindow(LIMITS.perApiKey),
              key: (request: FastifyRequest) => `api-key:${request.headers['x-api-key']}`,
            },
          ],
        },
      },
    },
    async (request) => ({ items: ['a', 'b', 'c'], apiKey: request.headers['x-api-key'] }),
  );

  // 5. Brute-force protection: only failed logins count (a 401), and the 5th in 15 minutes blocks the IP
  //    for an hour, in the store, so every instance sees it. The route's own algorithm replaces the
  //    plugin's limit here (a lockout on the per-IP bucket would block every route). The password comes
  //    in `x-password`.
  app.post(
    '/login',
    {
      config: {
        rateLimit: {
          algorithm: fixedWindow({ limit: LIMITS.login.limit, window: LIMITS.login.window }),
          prefix: `${PREFIX}:login`,
          skipSuccessfulRequests: true,
          blockDuration: LIMITS.login.block,
        },
      },
    },
    async (request, reply) => {
      if (request.headers['x-password'] === DEMO_PASSWORD) return { login: 'ok' };
      return reply.code(401).send({ login: 'wrong password' });
    },
  );

  await app.ready();
  return app;
}

async function requireApiKey(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && API_KEYS.has(apiKey)) return;
  await reply
    .code(401)
    .type('application/problem+json')
    .send({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Send a valid x-api-key header.' });
}
