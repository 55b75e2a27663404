/** The Express middleware against a real Redis (the store-redis test harness starts one, or uses REDIS_URL). */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import express4 from 'express4';
import request from 'supertest';
import { parseList } from 'structured-headers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, tokenBucket } from '@rl/core';
import type { RedisStore } from '@rl/store-redis';
import { rateLimit, type RateLimitOptions } from './index.js';

interface SharedRedis {
  useRedisStore(name: string): { readonly store: RedisStore };
}
/** Imported by path at run time: the shared Redis setup lives in the store-redis package's tests, outside this package's sources. */
const sharedRedisUrl = new URL('../../store-redis/test/shared-redis.ts', import.meta.url).href;
/** A Redis server, a client and a store (prefix `rl-express-test:<pid>:`) for this file: started in beforeAll, stopped in afterAll. */
const redis = ((await import(sharedRedisUrl)) as SharedRedis).useRedisStore('rl-express-test');

const T0 = 1_800_000_000_000;
const clock = (): number => T0;

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function listen(app: Express): Promise<string> {
  const s = app.listen(0, '127.0.0.1');
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
  ['Express 5', express],
  ['Express 4', express4 as unknown as typeof express],
])('%s with Redis', (_label, createApp) => {
  /** Each app gets a namespace of its own in the shared Redis; a generous timeout keeps a busy machine from tripping the failure policy. */
  function appWith(options: RateLimitOptions, route?: (req: Request, res: Response) => unknown): Express {
    const app = createApp();
    app.use(rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), ...options }));
    app.get('/', route ?? ((req, res) => res.json({ remaining: req.rateLimit?.remaining ?? null })));
    app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
      res.status(500).json({ error: error.message });
    });
    return app;
  }

  it('sends the headers, then 429 with Retry-After equal to t', async () => {
    const app = appWith({ algorithm: fixedWindow({ limit: 3, window: '1m' }) });
    for (let i = 1; i <= 3; i++) {
      const res = await request(app).get('/').expect(200);
      expect(members(res.headers['ratelimit'])).toEqual([{ name: '3-in-1m', params: { r: 3 - i, t: 60 } }]);
    }
    const denied = await request(app).get('/').expect(429);
    expect(denied.headers['retry-after']).toBe('60');
    expect(members(denied.headers['ratelimit'])[0]!.params.t).toBe(60);
    expect(denied.body).toMatchObject({ status: 429, retryAfter: 60 });
  });

  it('shares one limit between instances of an app (same prefix, one Redis)', async () => {
    const prefix = randomUUID();
    const [first, second] = [appWith({ prefix, algorithm: fixedWindow({ limit: 2, window: '1m' }) }), appWith({ prefix, algorithm: fixedWindow({ limit: 2, window: '1m' }) })];
    await request(first).get('/').expect(200);
    await request(second).get('/').expect(200);
    await request(first).get('/').expect(429);
    await request(second).get('/').expect(429);
  });

  it('charges costs, and gives back the units of the other limits when one denies', async () => {
    const app = appWith({
      limits: [
        { name: 'global', key: () => 'all', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: () => 5 },
        { name: 'user', key: (req) => String(req.headers['x-user']), algorithm: fixedWindow({ limit: 1, window: '1m' }) },
      ],
    });
    const first = await request(app).get('/').set('x-user', 'ann').expect(200);
    expect(members(first.headers['ratelimit'])).toEqual([
      { name: 'global', params: { r: 15, t: 1 } },
      { name: 'user', params: { r: 0, t: 60 } },
    ]);
    await request(app).get('/').set('x-user', 'ann').expect(429);
    const bob = await request(app).get('/').set('x-user', 'bob').expect(200);
    expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 10, t: 1 } });
  });

  it('charges nothing when the key function throws', async () => {
    const app = appWith({
      limits: [
        { name: 'global', key: () => 'all', algorithm: fixedWindow({ limit: 5, window: '1m' }) },
        {
          name: 'user',
          key: (req) => {
            if (!req.headers['x-user']) throw new Error('no user');
            return String(req.headers['x-user']);
          },
          algorithm: fixedWindow({ limit: 5, window: '1m' }),
        },
      ],
    });
    await request(app).get('/').expect(500);
    const ok = await request(app).get('/').set('x-user', 'ann').expect(200);
    expect(members(ok.headers['ratelimit'])[0]!.params.r).toBe(4);
  });

  it('releases a concurrency permit after the response and after a throw', async () => {
    const app = appWith({ algorithm: concurrency({ limit: 1 }), key: () => 'k' }, (req, res) => {
      if (req.query.fail) throw new Error('boom');
      res.send('ok');
    });
    await request(app).get('/').expect(200);
    await request(app).get('/?fail=1').expect(500);
    await expect.poll(async () => (await request(app).get('/')).status).toBe(200);
  });

  it('skips, and lets onLimit answer a denial', async () => {
    const app = appWith({
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      skip: (req) => req.query.free === '1',
      onLimit: (_req, res, _next, result) => {
        res.json({ slowDown: result.retryAfterSeconds });
      },
    });
    await request(app).get('/?free=1').expect(200);
    await request(app).get('/').expect(200);
    const denied = await request(app).get('/').expect(429);
    expect(denied.body).toEqual({ slowDown: 60 });
  });

  it('keys on the forwarded client under trust proxy, grouping IPv6 by /56', async () => {
    const app = createApp();
    app.set('trust proxy', 1);
    app.use(rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: fixedWindow({ limit: 1, window: '1m' }) }));
    app.get('/', (_req, res) => res.send('ok'));
    await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1200::1').expect(200);
    await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:12ff::2').expect(429);
    await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1300::1').expect(200);
    await request(app).get('/').set('x-forwarded-for', '203.0.113.1').expect(200);
  });

  it('releases a permit when the client disconnects, and gives back the slot of a client that leaves while held', async () => {
    const permits = rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: concurrency({ limit: 1 }), key: () => 'k' });
    const shaper = rateLimit({ clock, store: redis.store, timeout: '5s', prefix: randomUUID(), algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '10s' }, key: () => 'k' });
    const handler = vi.fn();
    const started = deferred();
    const held = deferred();
    const arrived = deferred();
    const app = createApp();
    app.get('/hang', permits, () => started.resolve());
    app.get('/ok', permits, (_req, res) => res.send('ok'));
    app.get('/shaped', (req, res, next) => {
      if (req.headers['x-probe']) {
        arrived.resolve();
        res.on('close', held.resolve);
      }
      next();
    }, shaper, (_req, res) => {
      handler();
      res.send('ran');
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
    const rejected = await request(app).get('/').expect(429);
    expect(rejected.headers['retry-after']).toBe('1');
  });
});
