import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Store } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServerHandle } from '../../../packages/store-redis/test/harness.js';
import { API_KEYS, LIMITS, buildApp, type AppOptions } from './app.js';

// The app runs on an ephemeral port of 127.0.0.1 and is called with fetch. Its limits get a frozen
// clock, so no token is refilled and no window ends during a test (no timing assumptions). Every test
// runs on the memory store and on a real Redis (a redis-server of its own, or REDIS_URL).
const apps: FastifyInstance[] = [];
let redisServer: RedisServerHandle | undefined;
let redisClient: Redis | undefined;

/** A RedisStore with a prefix of its own (a fresh state) on the shared test Redis. */
async function redisStore(): Promise<Store> {
  if (!redisClient) {
    redisServer = await startRedisServer();
    redisClient = new Redis(redisServer.url);
    await redisClient.ping();
  }
  return new RedisStore({ client: redisClient, prefix: `rl-example-fastify-${randomUUID()}:` });
}

afterAll(async () => {
  await redisClient?.quit();
  await redisServer?.stop();
});

let makeStore: () => Promise<Store | undefined>;

async function start(options: AppOptions = {}): Promise<string> {
  const now = Date.now();
  const store = await makeStore();
  // A loaded test machine must not turn a slow Redis answer into a 503: wait up to 5 s.
  const app = await buildApp({ clock: () => now, ...(store && { store, storeTimeout: '5s' }), ...options });
  apps.push(app);
  return app.listen({ port: 0, host: '127.0.0.1' });
}

afterEach(async () => {
  for (const app of apps.splice(0)) {
    app.server.closeAllConnections();
    await app.close();
  }
});

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

describe.each([
  ['memory store', async () => undefined],
  ['Redis store', redisStore],
])('fastify example on the %s', (_name, factory) => {
  beforeEach(() => {
    makeStore = factory;
  });

  it('limits each IP with a token bucket of 20 and answers 429 with the RateLimit headers', async () => {
    const url = await start();
    const first = await fetch(`${url}/`);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"10-in-1s";q=10;w=1');
    expect(remaining(first)).toBe(LIMITS.perIp.capacity - 1);
    expect(await first.json()).toMatchObject({ hello: 'world', remaining: LIMITS.perIp.capacity - 1 });
    for (let i = 1; i < LIMITS.perIp.capacity; i++) expect((await fetch(`${url}/`)).status).toBe(200);
    await expectDenied(await fetch(`${url}/`), '10-in-1s');
  });

  it('charges 5 tokens for /export', async () => {
    const url = await start();
    const first = await fetch(`${url}/export`);
    expect(first.status).toBe(200);
    expect(remaining(first)).toBe(LIMITS.perIp.capacity - LIMITS.exportCost);
    for (let i = 2; i <= LIMITS.perIp.capacity / LIMITS.exportCost; i++) expect((await fetch(`${url}/export`)).status).toBe(200);
    await expectDenied(await fetch(`${url}/export`), '10-in-1s');
    // The per-IP bucket covers every route, also those with limits of their own.
    await expectDenied(await fetch(`${url}/api/items`, { headers: { 'x-api-key': [...API_KEYS][0]! } }), '10-in-1s');
    await expectDenied(await fetch(`${url}/slow`), '10-in-1s');
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
