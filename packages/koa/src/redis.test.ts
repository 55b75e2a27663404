/** The Koa middleware against a real Redis (the store-redis test harness starts one, or uses REDIS_URL). */
import { randomUUID } from 'node:crypto';
import Koa, { type Context } from 'koa';
import Koa2 from 'koa2';
import { Redis } from 'ioredis';
import request from 'supertest';
import { parseList } from 'structured-headers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, slidingWindowLog, tokenBucket } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { rateLimit, type RateLimitOptions } from './index.js';

interface RedisHarness {
  startRedisServer(): Promise<{ url: string; stop(): Promise<void> }>;
}
/** Imported by path at run time: the harness lives in the store-redis package's tests, outside this package's sources. */
const harnessUrl = new URL('../../store-redis/test/harness.ts', import.meta.url).href;

const T0 = 1_800_000_000_000;
const clock = (): number => T0;

let server: { url: string; stop(): Promise<void> };
let client: Redis;
let store: RedisStore;

beforeAll(async () => {
  const { startRedisServer } = (await import(harnessUrl)) as RedisHarness;
  server = await startRedisServer();
  client = new Redis(server.url);
  store = new RedisStore({ client, prefix: `rl-koa-test:${process.pid}:` });
});

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

function members(value: string | undefined): { name: string; params: Record<string, unknown> }[] {
  expect(value, 'header present').toBeTypeOf('string');
  return parseList(value!).map(([item, params]) => ({ name: item as string, params: Object.fromEntries(params) }));
}

describe.each([
  ['Koa 3', Koa],
  ['Koa 2', Koa2 as unknown as typeof Koa],
])('%s with Redis', (_label, KoaApp) => {
  /** Each app gets a namespace of its own in the shared Redis; a generous timeout keeps a busy machine from tripping the failure policy. */
  function appWith(options: RateLimitOptions, handler?: (ctx: Context) => unknown): ReturnType<Koa['callback']> {
    const app = new KoaApp();
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (error) {
        ctx.status = 500;
        ctx.body = { error: (error as Error).message };
      }
    });
    app.use(rateLimit({ clock, store, timeout: '5s', prefix: randomUUID(), ...options }));
    app.use(
      handler ??
        ((ctx) => {
          ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
        }),
    );
    return app.callback();
  }

  it('sends the headers, then 429 with Retry-After equal to t', async () => {
    const app = appWith({ algorithm: slidingWindowLog({ limit: 5, window: '1m' }) });
    for (let i = 1; i <= 5; i++) expect(members((await request(app).get('/').expect(200)).headers['ratelimit'])[0]!.params.r).toBe(5 - i);
    const denied = await request(app).get('/').expect(429);
    expect(denied.headers['retry-after']).toBe('60');
    expect(members(denied.headers['ratelimit'])[0]!.params.t).toBe(60);
  });

  it('charges costs, and gives back the units of the other limits when one denies', async () => {
    const app = appWith({
      limits: [
        { name: 'global', key: () => 'all', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: 5 },
        { name: 'user', key: (ctx) => ctx.get('x-user'), algorithm: fixedWindow({ limit: 1, window: '1m' }) },
      ],
    });
    await request(app).get('/').set('x-user', 'ann').expect(200);
    await request(app).get('/').set('x-user', 'ann').expect(429);
    const bob = await request(app).get('/').set('x-user', 'bob').expect(200);
    expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 10, t: 1 } });
  });

  it('charges nothing when the key function throws', async () => {
    const app = appWith({
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      key: (ctx) => {
        if (!ctx.get('x-user')) throw new Error('no user');
        return ctx.get('x-user');
      },
    });
    await request(app).get('/').expect(500);
    expect(members((await request(app).get('/').set('x-user', 'ann').expect(200)).headers['ratelimit'])[0]!.params.r).toBe(4);
  });

  it('releases a concurrency permit when downstream throws and after the response', async () => {
    const app = appWith({ algorithm: concurrency({ limit: 1 }), key: () => 'k' }, (ctx) => {
      if (ctx.path === '/fail') throw new Error('boom');
      ctx.body = 'ok';
    });
    await request(app).get('/fail').expect(500);
    await request(app).get('/').expect(200);
    await expect.poll(async () => (await request(app).get('/')).status).toBe(200);
  });

  it('holds a shaped request, and rejects a delay beyond maxDelay', async () => {
    const app = appWith({ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' });
    await request(app).get('/').expect(200);
    await request(app).get('/').expect(200);
    expect((await request(app).get('/').expect(429)).headers['retry-after']).toBe('1');
  });
});
