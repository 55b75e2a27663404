import { once } from 'node:events';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa, { type Context } from 'koa';
import Koa2 from 'koa2';
import request from 'supertest';
import { parseList } from 'structured-headers';
import { parseRateLimit } from 'ratelimit-header-parser';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, slidingWindowLog, StoreError, type Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { rateLimit, type RateLimitOptions } from './index.js';

/** Window-aligned fake time: fixed windows of 1m start exactly here. */
const T0 = 1_800_000_000_000;
const clock = (): number => T0;

function members(value: string | undefined): { name: string; params: Record<string, unknown> }[] {
  expect(value, 'header present').toBeTypeOf('string');
  return parseList(value!).map(([item, params]) => ({ name: item as string, params: Object.fromEntries(params) }));
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function listen(app: Koa): Promise<string> {
  const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
  servers.push(server);
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Errors as JSON with their code, like an app's error middleware would. */
async function errorsAsJson(ctx: Context, next: () => Promise<unknown>): Promise<void> {
  try {
    await next();
  } catch (error) {
    const e = error as Error & { code?: string };
    ctx.status = 500;
    ctx.body = { error: e.message, code: e.code };
  }
}

describe.each([
  ['Koa 3', Koa],
  ['Koa 2', Koa2 as unknown as typeof Koa],
])('%s', (_label, KoaApp) => {
  function appWith(options: RateLimitOptions, configure?: (app: Koa) => void, routes?: (ctx: Context) => boolean): Koa {
    const app = new KoaApp();
    configure?.(app);
    app.use(errorsAsJson);
    app.use(rateLimit({ clock, ...options }));
    app.use((ctx) => {
      if (routes?.(ctx)) return;
      ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
    });
    return app;
  }

  describe('headers and the 429 at the limit', () => {
    it('sends draft-8 headers, then 429 with Retry-After equal to t and a problem+json body', async () => {
      const app = appWith({ algorithm: slidingWindowLog({ limit: 5, window: '1m' }) });
      for (let i = 1; i <= 5; i++) {
        const res = await request(app.callback()).get('/').expect(200);
        expect(members(res.headers['ratelimit-policy'])).toEqual([{ name: '5-in-1m', params: { q: 5, w: 60 } }]);
        expect(members(res.headers['ratelimit'])[0]!.params.r).toBe(5 - i);
        expect(res.body).toEqual({ remaining: 5 - i });
      }
      const denied = await request(app.callback()).get('/').expect(429);
      const [member] = members(denied.headers['ratelimit']);
      expect(member!.params.t).toBe(60);
      expect(denied.headers['retry-after']).toBe('60');
      expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(denied.text)).toMatchObject({ status: 429, retryAfter: 60 });
    });

    it.each(['draft-7', 'draft-6', 'legacy'] as const)('writes the %s format', async (format) => {
      const app = appWith({ algorithm: fixedWindow({ limit: 2, window: '1m' }), headers: format });
      const res = await request(app.callback()).get('/').expect(200);
      const parsed = parseRateLimit(res.headers as Record<string, string>, format === 'legacy' ? { reset: 'unix' } : { reset: 'seconds' });
      expect(parsed).toMatchObject({ limit: 2, remaining: 1, used: 1 });
    });
  });

  describe('costs, several limits, skip and custom handlers', () => {
    it('charges the cost and appends the members of stacked middlewares', async () => {
      const app = new KoaApp();
      app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 100, window: '1m' }) }));
      app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 20, window: '1s' }), cost: () => 5 }));
      app.use((ctx) => {
        ctx.body = 'ok';
      });
      const res = await request(app.callback()).get('/').expect(200);
      expect(members(res.headers['ratelimit'])).toEqual([
        { name: '100-in-1m', params: { r: 99, t: 60 } },
        { name: '20-in-1s', params: { r: 15, t: 1 } },
      ]);
    });

    it('admits only when every limit admits, and a denial uses no quota in the others', async () => {
      const app = appWith({
        limits: [
          { name: 'tenant', key: (ctx) => ctx.get('x-tenant'), algorithm: fixedWindow({ limit: 10, window: '1m' }) },
          { name: 'user', key: (ctx) => ctx.get('x-user'), algorithm: fixedWindow({ limit: 1, window: '1m' }) },
        ],
      });
      await request(app.callback()).get('/').set({ 'x-tenant': 't', 'x-user': 'ann' }).expect(200);
      const denied = await request(app.callback()).get('/').set({ 'x-tenant': 't', 'x-user': 'ann' }).expect(429);
      expect(members(denied.headers['ratelimit'])[0]).toEqual({ name: 'tenant', params: { r: 9, t: 60 } });
      const bob = await request(app.callback()).get('/').set({ 'x-tenant': 't', 'x-user': 'bob' }).expect(200);
      expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'tenant', params: { r: 8, t: 60 } });
    });

    it('lets skipped requests through uncounted', async () => {
      const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), skip: (ctx) => ctx.path === '/health' });
      for (let i = 0; i < 3; i++) expect((await request(app.callback()).get('/health').expect(200)).headers['ratelimit']).toBeUndefined();
      await request(app.callback()).get('/').expect(200);
    });

    it('lets onLimit set the body, with the status and headers already set', async () => {
      const app = appWith({
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onLimit: (ctx, result) => {
          ctx.body = { slowDown: result.retryAfterSeconds };
        },
      });
      await request(app.callback()).get('/').expect(200);
      const denied = await request(app.callback()).get('/').expect(429);
      expect(denied.body).toEqual({ slowDown: 60 });
      expect(denied.headers['retry-after']).toBe('60');
    });
  });

  describe('client IP keys', () => {
    it('uses X-Forwarded-For only with app.proxy, grouping IPv6 by /56, and warns once without it', async () => {
      const warnings: Error[] = [];
      const onWarning = (w: Error & { code?: string }): void => {
        if (w.code === 'RL_TRUST_PROXY') warnings.push(w);
      };
      process.on('warning', onWarning);
      try {
        const direct = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
        await request(direct.callback()).get('/').set('x-forwarded-for', '203.0.113.1').expect(200);
        await request(direct.callback()).get('/').set('x-forwarded-for', '203.0.113.2').expect(429);
        await new Promise((r) => setImmediate(r));
        expect(warnings).toHaveLength(1);

        const proxied = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, (a) => {
          a.proxy = true;
          a.maxIpsCount = 1;
        });
        await request(proxied.callback()).get('/').set('x-forwarded-for', '203.0.113.1').expect(200);
        await request(proxied.callback()).get('/').set('x-forwarded-for', '203.0.113.2').expect(200);
        await request(proxied.callback()).get('/').set('x-forwarded-for', '2001:db8:abcd:1200::1').expect(200);
        await request(proxied.callback()).get('/').set('x-forwarded-for', '2001:db8:abcd:12ff::2').expect(429);
        await request(proxied.callback()).get('/').set('x-forwarded-for', '2001:db8:abcd:1300::1').expect(200);
        expect(warnings).toHaveLength(1);
      } finally {
        process.off('warning', onWarning);
      }
    });
  });

  describe('waiting (shaping)', () => {
    it('holds a request for its delay, and rejects at once a delay beyond maxDelay', async () => {
      const app = appWith({ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' });
      await request(app.callback()).get('/').expect(200);
      await request(app.callback()).get('/').expect(200);
      const rejected = await request(app.callback()).get('/').expect(429);
      expect(rejected.headers['retry-after']).toBe('1');
    });

    it('never runs downstream for a client that leaves while held, and gives its slot back', async () => {
      const handler = vi.fn();
      const arrived = deferred();
      const closed = deferred();
      const app = new KoaApp();
      app.use((ctx, next) => {
        if (ctx.get('x-probe')) {
          arrived.resolve();
          ctx.res.on('close', closed.resolve);
        }
        return next();
      });
      const middleware = rateLimit({ clock, algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '10s' }, key: () => 'k' });
      app.use(middleware);
      app.use((ctx) => {
        handler();
        ctx.body = 'ran';
      });
      const base = await listen(app);
      await request(base).get('/').expect(200);
      const before = await middleware.limiter.limiters[0]!.peek('k');
      const client = http.get(`${base}/`, { headers: { 'x-probe': '1' } });
      client.on('error', () => {});
      await arrived.promise;
      await new Promise((r) => setTimeout(r, 30));
      client.destroy();
      await closed.promise;
      await new Promise((r) => setTimeout(r, 400));
      expect(handler).toHaveBeenCalledTimes(1);
      expect((await middleware.limiter.limiters[0]!.peek('k')).remaining).toBe(before.remaining);
    });
  });

  describe('concurrency permits', () => {
    it('releases the permit once: after the response, when downstream throws, when the client leaves', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const started = deferred();
      const app = new KoaApp();
      app.use(errorsAsJson);
      app.use(rateLimit({ clock, store, algorithm: concurrency({ limit: 1 }), key: () => 'k' }));
      app.use(async (ctx) => {
        if (ctx.path === '/fail') throw new Error('boom');
        if (ctx.path === '/hang') {
          started.resolve();
          await new Promise((r) => setTimeout(r, 200));
        }
        ctx.body = 'ok';
      });
      const base = await listen(app);
      await request(base).get('/').expect(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      await request(base).get('/fail').expect(500);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(2));
      const client = http.get(`${base}/hang`);
      client.on('error', () => {});
      await started.promise;
      await request(base).get('/').expect(429);
      client.destroy();
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(3));
      await request(base).get('/').expect(200);
      await new Promise((r) => setTimeout(r, 250));
      expect(release).toHaveBeenCalledTimes(4);
    });
  });

  it('gives the permit back when the client leaves while the limits run', async () => {
    const store = new MemoryStore();
    const release = vi.spyOn(store, 'release');
    const handler = vi.fn();
    const arrived = deferred();
    const gone = deferred();
    const app = new KoaApp();
    app.use((ctx, next) => {
      ctx.res.on('close', gone.resolve);
      return next();
    });
    // The key resolves only once the client has gone: its 'close' is already past when the permit is taken.
    app.use(rateLimit({ clock, store, algorithm: concurrency({ limit: 1 }), key: async () => (arrived.resolve(), await gone.promise, 'k') }));
    app.use((ctx) => {
      handler();
      ctx.body = 'ok';
    });
    const base = await listen(app);
    const client = http.get(`${base}/`);
    client.on('error', () => {});
    await arrived.promise;
    client.destroy();
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    expect(handler).not.toHaveBeenCalled();
  });

  describe('errors', () => {
    it('propagates a throwing key function to the error path (500), charging nothing', async () => {
      const app = appWith({
        algorithm: fixedWindow({ limit: 5, window: '1m' }),
        key: (ctx) => {
          if (!ctx.get('x-user')) throw new Error('no user');
          return ctx.get('x-user');
        },
      });
      const res = await request(app.callback()).get('/').expect(500);
      expect(res.body).toEqual({ error: 'no user' });
      const ok = await request(app.callback()).get('/').set('x-user', 'ann').expect(200);
      expect(members(ok.headers['ratelimit'])[0]!.params.r).toBe(4);
    });

    it('answers 500 by default when the cost function throws', async () => {
      const app = new KoaApp();
      app.silent = true;
      app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 5, window: '1m' }), cost: () => Promise.reject(new Error('cost failed')) }));
      app.use((ctx) => {
        ctx.body = 'ok';
      });
      await request(app.callback()).get('/').expect(500);
    });

    it('answers 503 with Retry-After when a fail-closed store fails', async () => {
      const broken: Store = {
        capabilities: { local: true, algorithms: ['fixed-window'] },
        consume: () => {
          throw new StoreError('connection refused');
        },
        peek: () => undefined as never,
        undo: () => undefined,
        reset: () => undefined,
        acquire: () => undefined as never,
        release: () => undefined,
      };
      const app = appWith({ store: broken, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
      const res = await request(app.callback()).get('/').expect(503);
      expect(res.headers['retry-after']).toBe('1');
    });
  });
});

describe('bad options are rejected when the middleware is created', () => {
  const algorithm = fixedWindow({ limit: 5, window: '1m' });
  it.each([
    ['no algorithm', {}, 'rateLimit.algorithm'],
    ['an unknown option', { algorithm, duration: 60000 }, 'rateLimit.duration'],
    ['a bad header format', { algorithm, headers: 'x-ratelimit' }, 'rateLimit.headers'],
    ['a cost function of the wrong type', { algorithm, cost: '5' }, 'rateLimit.cost'],
    ['an onLimit that is not a function', { algorithm, onLimit: 429 }, 'rateLimit.onLimit'],
  ])('%s', (_label, options, field) => {
    expect(() => rateLimit(options as unknown as RateLimitOptions)).toThrowError(expect.objectContaining({ code: 'RL_INVALID_OPTION', field }));
  });
});
