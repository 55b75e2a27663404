import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import express4 from 'express4';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import {
  captureWarnings,
  describeAdapter,
  headersOf,
  members,
  serve,
  statusOf,
  T0,
  type Adapter,
  type ServedApp,
} from '@rl/test-support';
import { rateLimit, type RateLimitOptions } from './index.js';

const clock = (): number => T0;

function errorHandler(error: Error & { code?: string }, _req: Request, res: Response, _next: NextFunction): void {
  res.status(500).json({ error: error.message, code: error.code });
}

const view = (req: Request) => ({
  path: req.path,
  url: req.originalUrl,
  header: (name: string) => req.get(name),
  rateLimit: req.rateLimit,
});

function expressAdapter(name: string, createApp: typeof express): Adapter {
  return {
    name,
    async mount(spec) {
      const app = createApp();
      if (spec.trustProxy)
        app.set('trust proxy', spec.trustProxy === 'all' ? true : spec.trustProxy === 'addresses' ? 'loopback' : 1);
      app.use((req, res, next) => {
        spec.onArrival?.(view(req), res);
        next();
      });
      const middlewares = spec.middlewares.map((options) => rateLimit(options as RateLimitOptions));
      for (const middleware of middlewares) app.use(middleware);
      app.use(async (req, res, next) => {
        try {
          const answer = await spec.handler?.(view(req));
          res.set(headersOf(answer));
          res.status(statusOf(answer)).json({ remaining: req.rateLimit?.remaining ?? null });
        } catch (error) {
          next(error);
        }
      });
      app.use(errorHandler);
      const served = await serve(app);
      const handle = middlewares[0]!;
      return { ...served, peek: (key) => handle.limiter.limiters[0]!.peek(key), controls: handle };
    },
    view: (req) => view(req as Request),
    responseHeader: (args, name) => (args[1] as Response).get(name),
    logsToConsole: true,
    lateErrorsAsWarnings: true,
    onLimitSending:
      (body) => (_req: Request, res: Response, _next: NextFunction, result: { retryAfterSeconds: number }) =>
        res.json(body(result)),
    namespaceOf: (options) => rateLimit(options as unknown as RateLimitOptions).limiter.prefix,
  };
}

const versions = [
  ['Express 5', express],
  ['Express 4', express4 as unknown as typeof express],
] as const;
describeAdapter(
  versions.map(([name, createApp]) => expressAdapter(name, createApp)),
  { redisStore: (client, prefix) => new RedisStore({ client, prefix }) },
);

// What only Express has: sub-apps and routers, and the `req.rateLimit` accessor.
describe.each(versions)('%s', (_label, createApp) => {
  const opened: ServedApp[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((app) => app.close()));
  });
  const open = async (app: Express) => {
    const served = await serve(app);
    opened.push(served);
    return served;
  };

  it('appends the members of an app-wide and a route limit, each with its own state', async () => {
    const app = createApp();
    app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 100, window: '1m' }) }));
    app.get(
      '/export',
      rateLimit({ clock, algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: () => 5 }),
      (_req, res) => {
        res.send('csv');
      },
    );
    const res = await (await open(app)).request('/export');
    expect(res.status).toBe(200);
    expect(members(res.headers['ratelimit'])).toEqual([
      { name: '100-in-1m', params: { r: 99, t: 60 } },
      { name: '20-in-2s', params: { r: 15, t: 1 } },
    ]);
    expect(members(res.headers['ratelimit-policy']).map((m) => m.name)).toEqual(['100-in-1m', '20-in-2s']);
  });

  it("warns RL_DOUBLE_COUNT for a route middleware that repeats the app-wide limit's options to change the cost; one limit with a cost by route does not", async () => {
    await captureWarnings('RL_DOUBLE_COUNT', async (warnings) => {
      const perIp = { clock, algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) };
      const wrong = createApp();
      wrong.use(rateLimit(perIp));
      wrong.get('/export', rateLimit({ ...perIp, cost: () => 5 }), (_req, res) => res.send('csv'));
      const right = createApp();
      right.use(rateLimit({ ...perIp, cost: (req) => (req.path === '/export' ? 5 : 1) }));
      right.get('/export', (_req, res) => res.send('csv'));
      const [wrongApp, rightApp] = [await open(wrong), await open(right)];
      expect(members((await wrongApp.request('/export')).headers['ratelimit']).map((m) => m.params.r)).toEqual([
        19, 15,
      ]);
      await wrongApp.request('/export');
      expect(members((await rightApp.request('/export')).headers['ratelimit'])).toEqual([
        { name: '20-in-2s', params: { r: 15, t: 1 } },
      ]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!).toContain('Two rl middlewares with the limit "20-in-2s" both ran on one request');
    });
  });

  it('warns RL_DOUBLE_COUNT when one middleware is mounted twice on a path', async () => {
    await captureWarnings('RL_DOUBLE_COUNT', async (warnings) => {
      const limit = rateLimit({ clock, algorithm: fixedWindow({ limit: 10, window: '1m' }) });
      const app = createApp();
      const api = express.Router();
      api.use(limit);
      api.get('/items', (_req, res) => res.send('items'));
      app.use(limit);
      app.use('/api', api);
      const mounted = await open(app);
      expect((await mounted.request('/api/items')).status).toBe(200);
      expect((await mounted.request('/api/items')).headers['ratelimit']).toMatch(/r=6/);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!).toMatch(/The same rl middleware \(limit "10-in-1m"\) ran twice on one request/);
    });
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
    const mounted = await open(app);
    // The first request may carry an own property (assigned before any rl middleware ran); later ones go through rl's accessor.
    expect((await mounted.request('/')).body).toMatchObject({ seen: 100, assigned: 7 });
    expect((await mounted.request('/')).body).toEqual({ seen: 100, own: false, assigned: 7 });
    const res = await mounted.request('/sub/x');
    expect(res.status).toBe(200);
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
    const mounted = await open(app);
    expect((await mounted.request('/a')).status).toBe(200);
    expect((await mounted.request('/b')).status).toBe(200);
    expect((await mounted.request('/c')).status).toBe(200);
    expect((await mounted.request('/d')).status).toBe(429);
  });

  it('sends an error thrown by onLimit to the error handler', async () => {
    const app = createApp();
    app.use(
      rateLimit({
        clock,
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onLimit: () => {
          throw new Error('handler broke');
        },
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    app.use(errorHandler);
    const mounted = await open(app);
    expect((await mounted.request('/')).status).toBe(200);
    const res = await mounted.request('/');
    expect(res.status).toBe(500);
    expect(res.body.error).toBe('handler broke');
  });
});
