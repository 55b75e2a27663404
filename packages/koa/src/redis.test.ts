/** The Koa middleware against a real Redis (the store-redis test harness starts one, or uses REDIS_URL). */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa, { type Context } from 'koa';
import Koa2 from 'koa2';
import request from 'supertest';
import { parseList } from 'structured-headers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, slidingWindowLog, tokenBucket } from '@rl/core';
import type { RedisStore } from '@rl/store-redis';
import { rateLimit, type RateLimitOptions } from './index.js';

interface SharedRedis {
  useRedisStore(name: string): { readonly store: RedisStore };
}
/** Imported by path at run time: the shared Redis setup lives in the store-redis package's tests, outside this package's sources. */
const sharedRedisUrl = new URL('../../store-redis/test/shared-redis.ts', import.meta.url).href;
/** A Redis server, a client and a store (prefix `rl-koa-test:<pid>:`) for this file: started in beforeAll, stopped in afterAll. */
const redis = ((await import(sharedRedisUrl)) as SharedRedis).useRedisStore('rl-koa-test');

const T0 = 1_800_000_000_000;
const clock = (): number => T0;

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function listen(app: Koa): Promise<string> {
  const s = http.createServer(app.callback()).listen(0, '127.0.0.1');
  servers.push(s);
  await once(s, 'listening');
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

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
    app.use(rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), ...options }));
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

  it('skips, and lets onLimit set the denial body', async () => {
    const app = appWith({
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      skip: (ctx) => ctx.query.free === '1',
      onLimit: (ctx, result) => {
        ctx.body = { slowDown: result.retryAfterSeconds };
      },
    });
    await request(app).get('/?free=1').expect(200);
    await request(app).get('/').expect(200);
    expect((await request(app).get('/').expect(429)).body).toEqual({ slowDown: 60 });
  });

  it('keys on the forwarded client with app.proxy, grouping IPv6 by /56', async () => {
    const app = new KoaApp();
    app.proxy = true;
    app.maxIpsCount = 1;
    app.use(rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: fixedWindow({ limit: 1, window: '1m' }) }));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const from = (ip: string) => request(app.callback()).get('/').set('x-forwarded-for', ip);
    await from('2001:db8:abcd:1200::1').expect(200);
    await from('2001:db8:abcd:12ff::2').expect(429);
    await from('2001:db8:abcd:1300::1').expect(200);
    await from('203.0.113.1').expect(200);
  });

  it('releases a permit when the client disconnects, and gives back the slot of a client that leaves while held', async () => {
    const permits = rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: concurrency({ limit: 1 }), key: () => 'k' });
    const shaper = rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '10s' }, key: () => 'k' });
    const handler = vi.fn();
    const started = deferred();
    const arrived = deferred();
    const held = deferred();
    const app = new KoaApp();
    app.use(async (ctx, next) => {
      if (ctx.path === '/shaped') {
        if (ctx.get('x-probe')) {
          arrived.resolve();
          ctx.res.on('close', held.resolve);
        }
        return shaper(ctx, async () => {
          handler();
          ctx.body = 'ran';
        });
      }
      return permits(ctx, async () => {
        if (ctx.path === '/hang') {
          started.resolve();
          await new Promise((r) => setTimeout(r, 200));
        }
        ctx.body = 'ok';
        return next();
      });
    });
    const base = await listen(app);

    const hanging = http.get(`${base}/hang`);
    hanging.on('error', () => {});
    await started.promise;
    await request(base).get('/ok').expect(429);
    hanging.destroy();
    await expect.poll(async () => (await request(base).get('/ok')).status).toBe(200);

    await request(base).get('/shaped').expect(200);
    const before = await shaper.limiter.limiters[0]!.peek('k');
    const client = http.get(`${base}/shaped`, { headers: { 'x-probe': '1' } });
    client.on('error', () => {});
    await arrived.promise;
    await new Promise((r) => setTimeout(r, 50));
    client.destroy();
    await held.promise;
    await new Promise((r) => setTimeout(r, 400));
    expect(handler).toHaveBeenCalledTimes(1);
    expect((await shaper.limiter.limiters[0]!.peek('k')).remaining).toBe(before.remaining);
  });

  it('holds a shaped request, and rejects a delay beyond maxDelay', async () => {
    const app = appWith({ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' });
    await request(app).get('/').expect(200);
    await request(app).get('/').expect(200);
    expect((await request(app).get('/').expect(429)).headers['retry-after']).toBe('1');
  });
});
