/** The Fastify plugin against a real Redis (the store-redis test harness starts one, or uses REDIS_URL). */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { parseList } from 'structured-headers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, tokenBucket } from '@rl/core';
import type { RedisStore } from '@rl/store-redis';
import rateLimit, { type RateLimitPluginOptions } from './index.js';

interface SharedRedis {
  useRedisStore(name: string): { readonly store: RedisStore };
}
/** Imported by path at run time: the shared Redis setup lives in the store-redis package's tests, outside this package's sources. */
const sharedRedisUrl = new URL('../../store-redis/test/shared-redis.ts', import.meta.url).href;
/** A Redis server, a client and a store (prefix `rl-fastify-test:<pid>:`) for this file: started in beforeAll, stopped in afterAll. */
const redis = ((await import(sharedRedisUrl)) as SharedRedis).useRedisStore('rl-fastify-test');

const T0 = 1_800_000_000_000;
const clock = (): number => T0;

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

function members(value: unknown): { name: string; params: Record<string, unknown> }[] {
  expect(value, 'header present').toBeTypeOf('string');
  return parseList(value as string).map(([item, params]) => ({ name: item as string, params: Object.fromEntries(params) }));
}

/** Each app gets a namespace of its own in the shared Redis; a generous timeout keeps a busy machine from tripping the failure policy. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function appWith(options: RateLimitPluginOptions, configure?: (app: FastifyInstance) => void, serverOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(serverOptions);
  apps.push(app);
  await app.register(rateLimit, { clock, store: redis.store, timeout: '5s', prefix: randomUUID(), ...options });
  app.get('/', async (request) => ({ remaining: request.rateLimit?.remaining ?? null }));
  configure?.(app);
  await app.ready();
  return app;
}

describe('@rl/fastify with Redis', () => {
  it('sends the headers, then 429 with Retry-After equal to t; a route cost spends the plugin limit', async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 6, window: '1m' }) }, (a) => {
      a.get('/export', { config: { rateLimit: { cost: 5 } } }, async () => 'csv');
    });
    expect(members((await app.inject('/export')).headers['ratelimit'])).toEqual([{ name: '6-in-1m', params: { r: 1, t: 60 } }]);
    expect(members((await app.inject('/')).headers['ratelimit'])[0]!.params.r).toBe(0);
    const denied = await app.inject('/');
    expect(denied.statusCode).toBe(429);
    expect(denied.headers['retry-after']).toBe('60');
    expect(members(denied.headers['ratelimit'])[0]!.params.t).toBe(60);
  });

  it('gives back the units of the other limits when one denies', async () => {
    const app = await appWith({
      limits: [
        { name: 'global', key: () => 'all', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: 5 },
        { name: 'user', key: (request) => String(request.headers['x-user']), algorithm: fixedWindow({ limit: 1, window: '1m' }) },
      ],
    });
    expect((await app.inject({ url: '/', headers: { 'x-user': 'ann' } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/', headers: { 'x-user': 'ann' } })).statusCode).toBe(429);
    const bob = await app.inject({ url: '/', headers: { 'x-user': 'bob' } });
    expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 10, t: 1 } });
  });

  it('charges nothing when the key function throws', async () => {
    const app = await appWith({
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      key: (request) => {
        if (!request.headers['x-user']) throw new Error('no user');
        return String(request.headers['x-user']);
      },
    });
    expect((await app.inject('/')).statusCode).toBe(500);
    expect(members((await app.inject({ url: '/', headers: { 'x-user': 'ann' } })).headers['ratelimit'])[0]!.params.r).toBe(4);
  });

  it('releases a concurrency permit after the response and after a throw', async () => {
    const app = await appWith({ algorithm: concurrency({ limit: 1 }), key: () => 'k' }, (a) => {
      a.get('/fail', async () => {
        throw new Error('boom');
      });
    });
    expect((await app.inject('/')).statusCode).toBe(200);
    expect((await app.inject('/fail')).statusCode).toBe(500);
    // The permit is released by the onResponse hook, which may finish just after the response.
    await expect.poll(async () => (await app.inject('/')).statusCode).toBe(200);
  });

  it('skips, and sends what onLimit returns', async () => {
    const app = await appWith({
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      skip: (request) => request.url === '/?free=1',
      onLimit: (_request, _reply, result) => ({ slowDown: result.retryAfterSeconds }),
    });
    expect((await app.inject('/?free=1')).statusCode).toBe(200);
    expect((await app.inject('/')).statusCode).toBe(200);
    const denied = await app.inject('/');
    expect(denied.statusCode).toBe(429);
    expect(denied.json()).toEqual({ slowDown: 60 });
  });

  it('keys on the forwarded client under trustProxy, grouping IPv6 by /56', async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, undefined, { trustProxy: true });
    const from = (ip: string) => app.inject({ url: '/', headers: { 'x-forwarded-for': ip } });
    expect((await from('2001:db8:abcd:1200::1')).statusCode).toBe(200);
    expect((await from('2001:db8:abcd:12ff::2')).statusCode).toBe(429);
    expect((await from('2001:db8:abcd:1300::1')).statusCode).toBe(200);
    expect((await from('203.0.113.1')).statusCode).toBe(200);
  });

  it('releases a permit when the client disconnects', async () => {
    const release = vi.spyOn(redis.store, 'release');
    const started = deferred();
    try {
      const app = await appWith({ algorithm: concurrency({ limit: 1 }), key: () => 'k' }, (a) => {
        a.get('/hang', async () => {
          started.resolve();
          await new Promise((r) => setTimeout(r, 200));
          return 'late';
        });
      });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const client = http.get(`${base}/hang`);
      client.on('error', () => {});
      await started.promise;
      expect((await app.inject('/')).statusCode).toBe(429);
      client.destroy();
      await expect.poll(async () => (await app.inject('/')).statusCode).toBe(200);
      await new Promise((r) => setTimeout(r, 250));
      // Each request released its permit once: the one that left and the ones that were admitted.
      expect(release.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(new Set(release.mock.calls.map((call) => call[2])).size).toBe(release.mock.calls.length);
    } finally {
      release.mockRestore();
    }
  });

  it('gives back the slot of a client that leaves while held', async () => {
    const handler = vi.fn(async () => 'ran');
    const arrived = deferred();
    const closed = deferred();
    const app = Fastify();
    apps.push(app);
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-probe']) {
        arrived.resolve();
        reply.raw.on('close', closed.resolve);
      }
    });
    await app.register(rateLimit, { clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '10s' }, key: () => 'k' });
    app.get('/', handler);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    expect((await app.inject('/')).statusCode).toBe(200);
    const client = http.get(`${base}/`, { headers: { 'x-probe': '1' } });
    client.on('error', () => {});
    await arrived.promise;
    await new Promise((r) => setTimeout(r, 50));
    client.destroy();
    await closed.promise;
    await new Promise((r) => setTimeout(r, 400));
    expect(handler).toHaveBeenCalledTimes(1);
    expect(members((await app.inject('/')).headers['ratelimit'])[0]!.params.r).toBe(3);
  });

  it('holds a shaped request, and rejects a delay beyond maxDelay', async () => {
    const app = await appWith({ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' });
    expect((await app.inject('/')).statusCode).toBe(200);
    expect((await app.inject('/')).statusCode).toBe(200);
    const rejected = await app.inject('/');
    expect(rejected.statusCode).toBe(429);
    expect(rejected.headers['retry-after']).toBe('1');
  });
});
