import { once } from 'node:events';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import express4 from 'express4';
import request from 'supertest';
import { parseList } from 'structured-headers';
import { parseRateLimit } from 'ratelimit-header-parser';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, StoreError, tokenBucket, type Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { rateLimit, type RateLimitOptions } from './index.js';

/** Window-aligned fake time: fixed windows of 1m start exactly here. */
const T0 = 1_800_000_000_000;
const clock = (): number => T0;

/** The members of a draft-8 RateLimit or RateLimit-Policy header, parsed by an independent parser. */
function members(value: string | undefined): { name: string; params: Record<string, unknown> }[] {
  expect(value, 'header present').toBeTypeOf('string');
  return parseList(value!).map(([item, params]) => ({ name: item as string, params: Object.fromEntries(params) }));
}

function errorHandler(error: Error & { code?: string }, _req: Request, res: Response, _next: NextFunction): void {
  res.status(500).json({ error: error.message, code: error.code });
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

function listen(app: Express): Promise<string> {
  const server = app.listen(0);
  servers.push(server);
  return once(server, 'listening').then(() => `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe.each([
  ['Express 5', express],
  ['Express 4', express4 as unknown as typeof express],
])('%s', (_label, createApp) => {
  function appWith(options: RateLimitOptions, configure?: (app: Express) => void): Express {
    const app = createApp();
    configure?.(app);
    app.use(rateLimit({ clock, ...options }));
    app.get('/', (req, res) => {
      res.json({ remaining: req.rateLimit?.remaining ?? null });
    });
    app.use(errorHandler);
    return app;
  }

  describe('headers and the 429 at the limit', () => {
    it('sends draft-8 headers, then 429 with Retry-After equal to t and a problem+json body', async () => {
      const app = appWith({ algorithm: fixedWindow({ limit: 3, window: '1m' }) });
      for (let i = 1; i <= 3; i++) {
        const res = await request(app).get('/').expect(200);
        expect(members(res.headers['ratelimit-policy'])).toEqual([{ name: '3-in-1m', params: { q: 3, w: 60 } }]);
        expect(members(res.headers['ratelimit'])).toEqual([{ name: '3-in-1m', params: { r: 3 - i, t: 60 } }]);
        expect(res.body).toEqual({ remaining: 3 - i });
        expect(res.headers['retry-after']).toBeUndefined();
      }
      const denied = await request(app).get('/').expect(429);
      const [member] = members(denied.headers['ratelimit']);
      expect(member).toEqual({ name: '3-in-1m', params: { r: 0, t: 60 } });
      expect(denied.headers['retry-after']).toBe('60');
      expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(denied.body).toMatchObject({ status: 429, title: 'Too Many Requests', retryAfter: 60 });
    });

    it('rounds Retry-After up to whole seconds, at least 1', async () => {
      // 10 tokens per second: the next token is 100 ms away.
      const app = appWith({ algorithm: tokenBucket({ capacity: 1, refillRate: 10 }) });
      await request(app).get('/').expect(200);
      const denied = await request(app).get('/').expect(429);
      expect(denied.headers['retry-after']).toBe('1');
      expect(members(denied.headers['ratelimit'])[0]!.params.t).toBe(1);
    });

    it.each([
      ['draft-7', { limit: 2, used: 1, remaining: 1 }],
      ['draft-6', { limit: 2, used: 1, remaining: 1 }],
      ['legacy', { limit: 2, used: 1, remaining: 1 }],
    ] as const)('writes the %s format', async (format, expected) => {
      const app = appWith({ algorithm: fixedWindow({ limit: 2, window: '1m' }), headers: format });
      const res = await request(app).get('/').expect(200);
      const parsed = parseRateLimit(res.headers as Record<string, string>, format === 'legacy' ? { reset: 'unix' } : { reset: 'seconds' });
      expect(parsed).toMatchObject(expected);
      const resetIn = (parsed!.reset!.getTime() - Date.now()) / 1000;
      expect(resetIn).toBeGreaterThan(50);
      expect(resetIn).toBeLessThanOrEqual(61);
      expect(res.headers['ratelimit-policy']).toBe(format === 'legacy' ? '2;w=60' : '2;w=60');
      if (format === 'draft-7') expect(res.headers['ratelimit']).toBe('limit=2, remaining=1, reset=60');
      if (format === 'draft-6') expect(res.headers['ratelimit-reset']).toBe('60');
      if (format === 'legacy') expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    });

    it.each(['draft-7', 'draft-6', 'legacy'] as const)('makes the %s reset of a denial equal to Retry-After', async (format) => {
      const app = appWith({ algorithm: tokenBucket({ capacity: 2, refillRate: 1, interval: '5s' }), headers: format });
      await request(app).get('/').expect(200);
      await request(app).get('/').expect(200);
      const denied = await request(app).get('/').expect(429);
      expect(denied.headers['retry-after']).toBe('5');
      const parsed = parseRateLimit(denied.headers as Record<string, string>, format === 'legacy' ? { reset: 'unix' } : { reset: 'seconds' });
      expect(parsed).toMatchObject({ remaining: 0 });
      const resetIn = (parsed!.reset!.getTime() - Date.now()) / 1000;
      expect(resetIn).toBeGreaterThan(3);
      expect(resetIn).toBeLessThanOrEqual(6);
      if (format === 'draft-7') expect(denied.headers['ratelimit']).toMatch(/reset=5$/);
      if (format === 'draft-6') expect(denied.headers['ratelimit-reset']).toBe('5');
    });

    it('sends only Retry-After with headers: false', async () => {
      const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), headers: false });
      const ok = await request(app).get('/').expect(200);
      expect(ok.headers['ratelimit']).toBeUndefined();
      expect(ok.headers['ratelimit-policy']).toBeUndefined();
      const denied = await request(app).get('/').expect(429);
      expect(denied.headers['retry-after']).toBe('60');
      expect(denied.headers['ratelimit']).toBeUndefined();
    });
  });

  describe('costs and several limits', () => {
    it('charges the cost of each request', async () => {
      const app = appWith({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: () => 5 });
      for (const remaining of [15, 10, 5, 0]) {
        const res = await request(app).get('/').expect(200);
        expect(members(res.headers['ratelimit'])[0]!.params.r).toBe(remaining);
      }
      await request(app).get('/').expect(429);
    });

    it('appends the members of an app-wide and a route limit, each with its own state', async () => {
      const app = createApp();
      app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 100, window: '1m' }) }));
      app.get('/export', rateLimit({ clock, algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: () => 5 }), (_req, res) => {
        res.send('csv');
      });
      const res = await request(app).get('/export').expect(200);
      expect(members(res.headers['ratelimit'])).toEqual([
        { name: '100-in-1m', params: { r: 99, t: 60 } },
        { name: '20-in-2s', params: { r: 15, t: 1 } },
      ]);
      expect(members(res.headers['ratelimit-policy']).map((m) => m.name)).toEqual(['100-in-1m', '20-in-2s']);
    });

    it('admits only when every limit admits, and a denial uses no quota in the others', async () => {
      const app = appWith({
        limits: [
          { name: 'global', key: () => 'all', algorithm: fixedWindow({ limit: 10, window: '1m' }) },
          { name: 'user', key: (req) => String(req.headers['x-user']), algorithm: fixedWindow({ limit: 2, window: '1m' }) },
        ],
      });
      await request(app).get('/').set('x-user', 'ann').expect(200);
      const second = await request(app).get('/').set('x-user', 'ann').expect(200);
      expect(members(second.headers['ratelimit'])).toEqual([
        { name: 'global', params: { r: 8, t: 60 } },
        { name: 'user', params: { r: 0, t: 60 } },
      ]);
      const denied = await request(app).get('/').set('x-user', 'ann').expect(429);
      // The global unit taken before the user limit denied was given back.
      expect(members(denied.headers['ratelimit'])).toEqual([
        { name: 'global', params: { r: 8, t: 60 } },
        { name: 'user', params: { r: 0, t: 60 } },
      ]);
      const other = await request(app).get('/').set('x-user', 'bob').expect(200);
      expect(members(other.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 7, t: 60 } });
      expect(other.body).toEqual({ remaining: 1 });
    });

    it('shows req.rateLimit outside a mounted sub-app, last middleware wins, and code may assign it', async () => {
      const app = createApp();
      const sub = createApp();
      sub.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 10, window: '1m' }) }));
      app.use((req, _res, next) => {
        req.rateLimit = undefined;
        next();
      });
      app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 100, window: '1m' }) }));
      app.use('/sub', sub);
      app.use((req, res) => {
        const seen = req.rateLimit?.limit ?? null;
        const own = Object.keys(req).includes('rateLimit');
        (req as { rateLimit?: unknown }).rateLimit = { limit: 7 };
        res.json({ seen, own, assigned: req.rateLimit?.limit });
      });
      // The first request may carry an own property (assigned before any rl middleware ran); later ones go through rl's accessor.
      expect((await request(app).get('/').expect(200)).body).toMatchObject({ seen: 100, assigned: 7 });
      expect((await request(app).get('/').expect(200)).body).toEqual({ seen: 100, own: false, assigned: 7 });
      const res = await request(app).get('/sub/x').expect(200);
      expect(res.body).toEqual({ seen: 10, own: false, assigned: 7 });
      expect(members(res.headers['ratelimit']).map((m) => m.name)).toEqual(['100-in-1m', '10-in-1m']);
    });

    it('keeps two middlewares on one store apart, unless they share a prefix on purpose', async () => {
      const store = new MemoryStore();
      const algorithm = fixedWindow({ limit: 1, window: '1m' });
      const app = createApp();
      app.get('/a', rateLimit({ clock, store, algorithm }), (_req, res) => res.send('a'));
      app.get('/b', rateLimit({ clock, store, algorithm }), (_req, res) => res.send('b'));
      app.get('/c', rateLimit({ clock, store, algorithm, prefix: 'shared' }), (_req, res) => res.send('c'));
      app.get('/d', rateLimit({ clock, store, algorithm, prefix: 'shared' }), (_req, res) => res.send('d'));
      await request(app).get('/a').expect(200);
      await request(app).get('/b').expect(200);
      await request(app).get('/c').expect(200);
      await request(app).get('/d').expect(429);
    });
  });

  describe('skip and custom handlers', () => {
    it('lets skipped requests through uncounted and without headers', async () => {
      const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), skip: async (req) => req.path === '/health' }, (a) => {
        a.get('/health', (_req, res) => res.send('ok'));
      });
      for (let i = 0; i < 3; i++) {
        const res = await request(app).get('/health').expect(200);
        expect(res.headers['ratelimit']).toBeUndefined();
      }
      await request(app).get('/').expect(200);
    });

    it('calls onLimit with the status and headers already set', async () => {
      const onLimit = vi.fn((_req: Request, res: Response, _next: NextFunction, result: { retryAfterSeconds: number }) => {
        res.json({ slowDown: result.retryAfterSeconds });
      });
      const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), onLimit });
      await request(app).get('/').expect(200);
      const denied = await request(app).get('/').expect(429);
      expect(denied.body).toEqual({ slowDown: 60 });
      expect(denied.headers['retry-after']).toBe('60');
      expect(onLimit).toHaveBeenCalledTimes(1);
    });

    it('sends an error thrown by onLimit to the error handler', async () => {
      const app = appWith({
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onLimit: () => {
          throw new Error('handler broke');
        },
      });
      await request(app).get('/').expect(200);
      const res = await request(app).get('/').expect(500);
      expect(res.body.error).toBe('handler broke');
    });
  });

  describe('client IP keys', () => {
    it('ignores X-Forwarded-For without trust proxy, and warns once', async () => {
      const warnings: Error[] = [];
      const onWarning = (w: Error): void => {
        if ((w as Error & { code?: string }).code === 'RL_TRUST_PROXY') warnings.push(w);
      };
      process.on('warning', onWarning);
      try {
        const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
        await request(app).get('/').set('x-forwarded-for', '203.0.113.1').expect(200);
        await request(app).get('/').set('x-forwarded-for', '203.0.113.2').expect(429);
        await new Promise((r) => setImmediate(r));
        expect(warnings).toHaveLength(1);
        expect(warnings[0]!.message).toMatch(/trust proxy/);
      } finally {
        process.off('warning', onWarning);
      }
    });

    it('keys on the forwarded client under trust proxy, grouping IPv6 by /56', async () => {
      const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, (a) => a.set('trust proxy', 1));
      await request(app).get('/').set('x-forwarded-for', '203.0.113.1').expect(200);
      await request(app).get('/').set('x-forwarded-for', '203.0.113.2').expect(200);
      await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1200::1').expect(200);
      // Same /56, another address: the same client.
      await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:12ff:ffff::9').expect(429);
      await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1300::1').expect(200);
    });

    it('groups IPv6 by the configured prefix length', async () => {
      const app = appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), ipv6Subnet: 64 }, (a) => a.set('trust proxy', 1));
      await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1200::1').expect(200);
      await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1201::1').expect(200);
      await request(app).get('/').set('x-forwarded-for', '2001:db8:abcd:1200::2').expect(429);
    });
  });

  describe('waiting (shaping)', () => {
    it('holds a request for its delay, and rejects at once a delay beyond maxDelay', async () => {
      // One request per 50 ms; the clock stands still, so the queue only grows.
      const app = appWith({ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' });
      const first = await request(app).get('/').expect(200);
      expect(first.body).toEqual({ remaining: 9 });
      await request(app).get('/').expect(200); // held 50 ms
      const rejected = await request(app).get('/').expect(429); // would be held 100 ms
      expect(rejected.headers['retry-after']).toBe('1');
      expect(members(rejected.headers['ratelimit'])[0]!.params.t).toBe(1);
      // The rejected request's slot was given back: the next one still waits 100 ms, so it is rejected the same way.
      const again = await request(app).get('/').expect(429);
      expect(again.body.retryAfter).toBe(1);
    });

    it('never runs the handler of a client that leaves while held, and gives its slot back', async () => {
      const handler = vi.fn((_req: Request, res: Response) => {
        res.send('ran');
      });
      const arrived = deferred();
      const closed = deferred();
      const app = createApp();
      app.use((req, res, next) => {
        if (req.headers['x-probe']) {
          arrived.resolve();
          res.on('close', closed.resolve);
        }
        next();
      });
      const middleware = rateLimit({ clock, algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '10s' }, key: () => 'k' });
      app.use(middleware);
      app.get('/', handler);
      const base = await listen(app);
      await request(base).get('/').expect(200); // no delay
      expect(handler).toHaveBeenCalledTimes(1);
      const peekBefore = await middleware.limiter.limiters[0]!.peek('k');

      const client = http.get(`${base}/`, { headers: { 'x-probe': '1' } });
      client.on('error', () => {});
      await arrived.promise;
      await new Promise((r) => setTimeout(r, 30));
      client.destroy();
      await closed.promise;
      await new Promise((r) => setTimeout(r, 400)); // past the 300 ms the request would have been held
      expect(handler).toHaveBeenCalledTimes(1);
      const peekAfter = await middleware.limiter.limiters[0]!.peek('k');
      expect(peekAfter.remaining).toBe(peekBefore.remaining);
    });
  });

  describe('concurrency permits', () => {
    function concurrencyApp(store: Store, handler: (req: Request, res: Response) => unknown): Express {
      const app = createApp();
      app.use(rateLimit({ clock, store, algorithm: concurrency({ limit: 1 }), key: () => 'k' }));
      app.get('/', handler);
      app.use(errorHandler);
      return app;
    }

    it('holds the permit until the response finishes, then releases it exactly once', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const gate = deferred();
      const started = deferred();
      const app = concurrencyApp(store, async (req, res) => {
        if (req.query.slow) {
          started.resolve();
          await gate.promise;
        }
        res.send('done');
      });
      const base = await listen(app);
      const slow = request(base).get('/?slow=1').then((r) => r.status);
      await started.promise;
      const blocked = await request(base).get('/').expect(429);
      expect(members(blocked.headers['ratelimit-policy'])[0]!.name).toBe('1-concurrent');
      gate.resolve();
      expect(await slow).toBe(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      await request(base).get('/').expect(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(2));
    });

    it('gives the permit back at once when a rate limit after it denies', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const app = createApp();
      app.use(
        rateLimit({
          clock,
          store,
          limits: [
            { name: 'in-flight', key: () => 'k', algorithm: concurrency({ limit: 1 }) },
            { name: 'rate', key: () => 'k', algorithm: fixedWindow({ limit: 1, window: '1m' }) },
          ],
        }),
      );
      app.get('/', (_req, res) => res.send('ok'));
      await request(app).get('/').expect(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      const denied = await request(app).get('/').expect(429);
      expect(release).toHaveBeenCalledTimes(2);
      expect(members(denied.headers['ratelimit']).map((m) => m.name)).toEqual(['in-flight', 'rate']);
      // The permit is free again (reported as remaining after the rollback): the in-flight limit admits, the rate limit still denies.
      const again = await request(app).get('/').expect(429);
      expect(members(again.headers['ratelimit'])[0]).toMatchObject({ name: 'in-flight', params: { r: 1 } });
      expect(release).toHaveBeenCalledTimes(3);
    });

    it('gives the permit back when the client leaves while the limits run', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const handler = vi.fn();
      const arrived = deferred();
      const gone = deferred();
      const app = createApp();
      app.use((_req, res, next) => {
        res.on('close', gone.resolve);
        next();
      });
      // The key resolves only once the client has gone: its 'close' is already past when the permit is taken.
      app.use(rateLimit({ clock, store, algorithm: concurrency({ limit: 1 }), key: async () => (arrived.resolve(), await gone.promise, 'k') }));
      app.get('/', (_req, res) => {
        handler();
        res.send('ok');
      });
      const base = await listen(app);
      const client = http.get(`${base}/`);
      client.on('error', () => {});
      await arrived.promise;
      client.destroy();
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      expect(handler).not.toHaveBeenCalled();
    });

    it('releases the permit when the handler throws', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const app = concurrencyApp(store, (req) => {
        if (req.query.fail) throw new Error('boom');
        return undefined;
      });
      app.get('/ok', (_req, res) => res.send('ok'));
      await request(app).get('/?fail=1').expect(500);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      await request(app).get('/ok').expect(200);
    });

    it('releases the permit when the client disconnects', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const started = deferred();
      const app = concurrencyApp(store, (req, res) => {
        if (req.query.hang) started.resolve();
        else res.send('ok');
      });
      const base = await listen(app);
      const client = http.get(`${base}/?hang=1`);
      client.on('error', () => {});
      await started.promise;
      await request(base).get('/').expect(429);
      client.destroy();
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      await request(base).get('/').expect(200);
    });
  });

  describe('errors', () => {
    it('answers 500 through the error handler when the key function throws, charging nothing', async () => {
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
      const res = await request(app).get('/').expect(500);
      expect(res.body).toEqual({ error: 'no user' });
      const ok = await request(app).get('/').set('x-user', 'ann').expect(200);
      expect(members(ok.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 4, t: 60 } });
    });

    const badCosts: [string, () => number | Promise<number>, string | undefined, string | undefined][] = [
      ['throws', () => Promise.reject(new Error('cost failed')), 'cost failed', undefined],
      ['returns NaN', () => Number.NaN, undefined, 'RL_INVALID_COST'],
      ['exceeds the capacity', () => 50, undefined, 'RL_COST_EXCEEDS_CAPACITY'],
    ];
    it.each(badCosts)('answers 500 when the cost function %s, charging nothing', async (_label, cost, message, code) => {
      const app = appWith({ algorithm: fixedWindow({ limit: 5, window: '1m' }), cost: (req) => (req.headers['x-bad'] ? cost() : 1) });
      const res = await request(app).get('/').set('x-bad', '1').expect(500);
      if (message) expect(res.body.error).toBe(message);
      if (code) expect(res.body.code).toBe(code);
      const ok = await request(app).get('/').expect(200);
      expect(members(ok.headers['ratelimit'])[0]!.params.r).toBe(4);
    });

    it('answers 503 with Retry-After when a fail-closed store fails, and admits with a fail-open one', async () => {
      const broken: Store = {
        capabilities: { local: true, algorithms: ['fixed-window'] },
        consume: () => {
          throw new StoreError('connection refused');
        },
        peek: () => {
          throw new StoreError('connection refused');
        },
        undo: () => undefined,
        reset: () => undefined,
        acquire: () => {
          throw new StoreError('connection refused');
        },
        release: () => undefined,
      };
      const closed = appWith({ store: broken, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
      const res = await request(closed).get('/').expect(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toMatchObject({ status: 503, retryAfter: 1 });
      const open = appWith({ store: broken, algorithm: fixedWindow({ limit: 5, window: '1m' }), onStoreError: 'allow' });
      const admitted = await request(open).get('/').expect(200);
      expect(admitted.headers['ratelimit']).toBeUndefined();
    });
  });
});

describe('bad options are rejected when the middleware is created', () => {
  const algorithm = fixedWindow({ limit: 5, window: '1m' });
  it.each([
    ['no algorithm', {}, 'rateLimit.algorithm'],
    ['algorithm and limits', { algorithm, limits: [{ algorithm }] }, 'rateLimit.algorithm'],
    ['an unknown option', { algorithm, windowMs: 1000 }, 'rateLimit.windowMs'],
    ['a bad algorithm', { algorithm: { limit: 5 } }, 'rateLimit.algorithm'],
    ['empty limits', { limits: [] }, 'rateLimit.limits'],
    ['an unknown limit option', { limits: [{ algorithm, max: 5 }] }, 'rateLimit.limits[0].max'],
    ['two limits with one name', { limits: [{ algorithm }, { algorithm }] }, 'rateLimit.limits[1].name'],
    ['a bad header format', { algorithm, headers: 'draft-5' }, 'rateLimit.headers'],
    ['a zero cost', { algorithm, cost: 0 }, 'rateLimit.cost'],
    ['a key that is not a function', { algorithm, key: 'ip' }, 'rateLimit.key'],
    ['a skip that is not a function', { algorithm, skip: true }, 'rateLimit.skip'],
    ['a bad IPv6 prefix', { algorithm, ipv6Subnet: 200 }, 'rateLimit.ipv6Subnet'],
    ['an empty prefix', { algorithm, prefix: '' }, 'rateLimit.prefix'],
    ['wait without a shaping limit', { algorithm, wait: { maxDelay: '1s' } }, 'rateLimit.wait'],
    ['a shaping limit without wait', { algorithm: leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }) }, 'rateLimit.wait'],
    ['a maxDelay beyond a Node timer', { algorithm: leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }), wait: { maxDelay: '30d' } }, 'rateLimit.wait.maxDelay'],
    ['a bad maxDelay', { algorithm: leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }), wait: { maxDelay: 'soon' } }, 'rateLimit.wait.maxDelay'],
    ['a cost on a concurrency limit', { limits: [{ algorithm: concurrency({ limit: 2 }), cost: 2 }] }, 'rateLimit.limits[0].cost'],
    ['an onLimit that is not a function', { algorithm, onLimit: 'deny' }, 'rateLimit.onLimit'],
    ['a bad failure policy', { algorithm, onStoreError: 'ignore' }, 'createLimiter.onStoreError'],
  ])('%s', (_label, options, field) => {
    let thrown: unknown;
    try {
      rateLimit(options as unknown as RateLimitOptions);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'RL_INVALID_OPTION', field });
  });

  it('rejects a constant cost larger than a limit could ever admit', () => {
    expect(() => rateLimit({ algorithm, cost: 6 })).toThrowError(expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }));
  });
});
