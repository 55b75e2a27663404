import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { concurrency, fixedWindow, tokenBucket, type Clock, type Duration, type Store } from '@rl/core';
import rateLimit from '@rl/fastify';
import { MemoryStore } from '@rl/store-memory';

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
} as const;

/** Namespace of this app's limits in the store. */
const PREFIX = 'rl-example';

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
  const shared = {
    store: options.store ?? new MemoryStore(),
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

  // 2. /export is expensive: it takes 5 tokens of the caller's bucket (route config merged over the plugin's).
  app.get('/export', { config: { rateLimit: { cost: LIMITS.exportCost } } }, async () => ({ export: 'ok', rows: 1000 }));

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
            { algorithm: fixedWindow(LIMITS.perApiKey), key: (request: FastifyRequest) => `api-key:${request.headers['x-api-key']}` },
          ],
        },
      },
    },
    async (request) => ({ items: ['a', 'b', 'c'], apiKey: request.headers['x-api-key'] }),
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
