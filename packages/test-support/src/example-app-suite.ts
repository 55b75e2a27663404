/**
 * The tests of every example's app (`examples/<framework>/src/app.ts`), shared: each example's
 * `src/app.test.ts` registers them with the way its framework starts and closes the app.
 *
 * The app runs on an ephemeral port of 127.0.0.1 and is called with fetch. Its limits get a frozen
 * clock, so no token is refilled and no window ends during a test (no timing assumptions). Every test
 * runs on the memory store and on a real Redis (a redis-server of its own, or REDIS_URL).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '@rl/core';
import { startSharedRedis, type SharedRedis } from './redis-fixtures.js';

/** The options of `createApp` / `buildApp` the tests pass (the same in every example). */
export interface ExampleAppOptions {
  store?: Store;
  clock?: () => number;
  storeTimeout?: `${number}s`;
  slowWork?: () => Promise<void>;
}

/** An example app listening on 127.0.0.1. */
export interface OpenedApp {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Drops its connections and stops listening. */
  close(): Promise<void>;
}

/** What an example's app module exports for its tests. */
export interface ExampleApp {
  /** The framework's name: `express`, `fastify`, `koa`. */
  name: string;
  /** The limits of the example (`LIMITS` of its `app.ts`). */
  limits: {
    readonly perIp: { readonly capacity: number };
    readonly perApiKey: { readonly limit: number };
    readonly exportCost: number;
    readonly slowConcurrency: number;
    readonly login: { readonly limit: number; readonly block: string };
  };
  /** The password POST /login accepts (`DEMO_PASSWORD` of its `app.ts`), sent in `x-password`. */
  password: string;
  /** The demo API keys (`API_KEYS` of its `app.ts`). */
  apiKeys: ReadonlySet<string>;
  /** Builds the app with `options` and listens on an ephemeral port of 127.0.0.1. */
  open(options: ExampleAppOptions): Promise<OpenedApp>;
  /** A RedisStore on `client` whose keys start with `prefix`. */
  redisStore(client: Redis, prefix: string): Store;
}

/** Listens with `app.listen(0, '127.0.0.1')` (Express and Koa apps alike); `close()` drops the connections. */
export async function listenOnFreePort(app: { listen(port: number, host: string, listening: () => void): Server }): Promise<OpenedApp> {
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
}

/** `r` of the RateLimit header: the units left. */
function remaining(res: Response): number {
  const match = /;\s*r=(\d+)/.exec(res.headers.get('ratelimit') ?? '');
  if (!match) throw new Error(`no r= in RateLimit: ${res.headers.get('ratelimit')}`);
  return Number(match[1]);
}

/** A 429 with the IETF headers, Retry-After and a problem+json body. */
async function expectDenied(res: Response, policy: string): Promise<void> {
  expect(res.status).toBe(429);
  expect(res.headers.get('ratelimit-policy')).toContain(`"${policy}";q=`);
  expect(res.headers.get('ratelimit-policy')).toMatch(/"[^"]+";q=\d+;w=\d+/);
  expect(res.headers.get('ratelimit')).toMatch(new RegExp(`"${policy}";r=0;t=\\d+`));
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { status?: number };
  expect(body.status).toBe(429);
}

/** Registers the example app's tests, on the memory store and on Redis. */
export function describeExampleApp({ name, limits: LIMITS, apiKeys: API_KEYS, password, open: openApp, redisStore: storeOn }: ExampleApp): void {
  const opened: OpenedApp[] = [];
  let redis: SharedRedis | undefined;

  /** A RedisStore with a prefix of its own (a fresh state) on the shared test Redis, started on first use. */
  async function redisStore(): Promise<ExampleAppOptions['store']> {
    if (!redis) {
      redis = await startSharedRedis(`rl-example-${name}`);
      await redis.client.ping();
    }
    return storeOn(redis.client, `rl-example-${name}-${randomUUID()}:`);
  }

  afterAll(async () => {
    await redis?.stop();
  });

  let makeStore: () => Promise<ExampleAppOptions['store']>;

  async function start(options: ExampleAppOptions = {}): Promise<string> {
    const now = Date.now();
    const store = await makeStore();
    // A loaded test machine must not turn a slow Redis answer into a 503: wait up to 5 s.
    const app = await openApp({ clock: () => now, ...(store && { store, storeTimeout: '5s' }), ...options });
    opened.push(app);
    return app.url;
  }

  afterEach(async () => {
    for (const app of opened.splice(0)) await app.close();
  });

  describe.each([
    ['memory store', async () => undefined],
    ['Redis store', redisStore],
  ])(`${name} example on the %s`, (_name, factory) => {
    beforeEach(() => {
      makeStore = factory;
    });

    it('limits each IP with a token bucket of 20 and answers 429 with the RateLimit headers', async () => {
      const url = await start();
      const first = await fetch(`${url}/`);
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toBe('"20-in-2s";q=20;w=2');
      expect(remaining(first)).toBe(LIMITS.perIp.capacity - 1);
      expect(await first.json()).toMatchObject({ hello: 'world', remaining: LIMITS.perIp.capacity - 1 });
      for (let i = 1; i < LIMITS.perIp.capacity; i++) expect((await fetch(`${url}/`)).status).toBe(200);
      await expectDenied(await fetch(`${url}/`), '20-in-2s');
    });

    it('charges 5 tokens for /export', async () => {
      const url = await start();
      const first = await fetch(`${url}/export`);
      expect(first.status).toBe(200);
      expect(remaining(first)).toBe(LIMITS.perIp.capacity - LIMITS.exportCost);
      for (let i = 2; i <= LIMITS.perIp.capacity / LIMITS.exportCost; i++) expect((await fetch(`${url}/export`)).status).toBe(200);
      await expectDenied(await fetch(`${url}/export`), '20-in-2s');
      // The per-IP bucket covers every route, also those with limits of their own.
      await expectDenied(await fetch(`${url}/api/items`, { headers: { 'x-api-key': [...API_KEYS][0]! } }), '20-in-2s');
      await expectDenied(await fetch(`${url}/slow`), '20-in-2s');
    });

    it('limits each API key to 10 requests a minute on /api', async () => {
      const url = await start();
      expect((await fetch(`${url}/api/items`)).status).toBe(401);
      const [alice, bob] = [...API_KEYS];
      for (let i = 0; i < LIMITS.perApiKey.limit; i++) {
        expect((await fetch(`${url}/api/items`, { headers: { 'x-api-key': alice! } })).status).toBe(200);
      }
      await expectDenied(await fetch(`${url}/api/items`, { headers: { 'x-api-key': alice! } }), '10-in-1m');
      // Another key from the same IP still passes.
      expect((await fetch(`${url}/api/items`, { headers: { 'x-api-key': bob! } })).status).toBe(200);
    });

    it('counts only failed logins, and blocks the IP for an hour at the limit', async () => {
      const url = await start();
      const login = (pw: string) => fetch(`${url}/login`, { method: 'POST', headers: { 'x-password': pw } });
      // Successful logins are given back: more of them than the limit all pass.
      for (let i = 0; i < LIMITS.login.limit + 3; i++) expect((await login(password)).status).toBe(200);
      for (let i = 0; i < LIMITS.login.limit; i++) expect((await login('guess')).status).toBe(401);
      const blocked = await login(password);
      expect(blocked.status).toBe(429);
      expect(blocked.headers.get('retry-after')).toBe('3600');
      expect((await login(password)).headers.get('retry-after')).toBe('3600');
    });

    it('serves the limits’ metrics on /metrics', async () => {
      const url = await start();
      for (let i = 0; i < 3; i++) expect((await fetch(`${url}/`)).status).toBe(200);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain('rl_decisions_total{limit="20-in-2s",outcome="allowed"} 3');
      expect(metrics).toContain('rl_decisions_total{limit="20-in-2s",outcome="denied"} 0');
    });

    it('allows 2 requests to /slow in flight per IP', async () => {
      let started = 0;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const url = await start({
        slowWork: () => {
          started++;
          return gate;
        },
      });
      const inFlight = [fetch(`${url}/slow`), fetch(`${url}/slow`)];
      while (started < LIMITS.slowConcurrency) await new Promise((resolve) => setTimeout(resolve, 5));
      await expectDenied(await fetch(`${url}/slow`), `${LIMITS.slowConcurrency}-concurrent`);
      open();
      for (const res of await Promise.all(inFlight)) expect(res.status).toBe(200);
      // The permits came back when the responses ended.
      expect((await fetch(`${url}/slow`)).status).toBe(200);
    });
  });
}
