import Koa, { type Context } from 'koa';
import Koa2 from 'koa2';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { describeAdapter, headersOf, serve, statusOf, T0, type Adapter } from '@rl/test-support';
import { rateLimit, type RateLimitOptions } from './index.js';

const clock = (): number => T0;

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

const view = (ctx: Context) => ({
  path: ctx.path,
  url: ctx.url,
  header: (name: string) => ctx.get(name) || undefined,
  rateLimit: ctx.state.rateLimit as unknown,
});

function koaAdapter(name: string, KoaApp: typeof Koa): Adapter {
  return {
    name,
    async mount(spec) {
      const app = new KoaApp();
      if (spec.trustProxy) {
        app.proxy = true;
        if (spec.trustProxy !== 'all') app.maxIpsCount = 1;
      }
      app.use((ctx, next) => {
        spec.onArrival?.(view(ctx), ctx.res);
        return next();
      });
      app.use(errorsAsJson);
      const middlewares = spec.middlewares.map((options) => rateLimit(options as RateLimitOptions));
      for (const middleware of middlewares) app.use(middleware);
      app.use(async (ctx) => {
        const answer = await spec.handler?.(view(ctx));
        ctx.set(headersOf(answer));
        ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
        ctx.status = statusOf(answer);
      });
      const served = await serve(app.callback());
      const handle = middlewares[0]!;
      return { ...served, peek: (key) => handle.limiter.limiters[0]!.peek(key), controls: handle };
    },
    view: (ctx) => view(ctx as Context),
    responseHeader: (args, name) => (args[0] as Context).response.get(name) || undefined,
    logsToConsole: true,
    namespaceOf: (options) => rateLimit(options as unknown as RateLimitOptions).limiter.prefix,
    onLimitSending: (body) => (ctx: Context, result: { retryAfterSeconds: number }) => {
      ctx.body = body(result);
    },
  };
}

const versions = [
  ['Koa 3', Koa],
  ['Koa 2', Koa2 as unknown as typeof Koa],
] as const;
describeAdapter(
  versions.map(([name, KoaApp]) => koaAdapter(name, KoaApp)),
  { redisStore: (client, prefix) => new RedisStore({ client, prefix }) },
);

// What only Koa has: its default error handling (no error middleware).
describe.each(versions)('%s', (_label, KoaApp) => {
  it('answers 500 by default when the cost function throws', async () => {
    const app = new KoaApp();
    app.silent = true;
    app.use(
      rateLimit({
        clock,
        algorithm: fixedWindow({ limit: 5, window: '1m' }),
        cost: () => Promise.reject(new Error('cost failed')),
      }),
    );
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const served = await serve(app.callback());
    try {
      expect((await served.request('/')).status).toBe(500);
    } finally {
      await served.close();
    }
  });

  it.each([
    ['draft-8', ['retry-after', 'ratelimit', 'ratelimit-policy']],
    ['legacy', ['retry-after', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']],
  ] as const)(
    "an onLimit that throws (koa-ratelimit's `throw`) keeps Retry-After and the %s headers on the 429, and the error's own",
    async (format, names) => {
      const app = new KoaApp();
      app.silent = true;
      app.use(
        rateLimit({
          clock,
          headers: format,
          algorithm: fixedWindow({ limit: 1, window: '1m' }),
          onLimit: (ctx) => ctx.throw(429, 'Slow down', { headers: { 'x-reason': 'quota', 'Retry-After': '61' } }),
        }),
      );
      app.use((ctx) => {
        ctx.body = 'ok';
      });
      const served = await serve(app.callback());
      try {
        await served.request('/');
        const denied = await served.request('/');
        expect([denied.status, denied.text]).toEqual([429, 'Slow down']);
        for (const name of names) expect(denied.headers[name], name).toBeDefined();
        // The error's own headers win over rl's.
        expect([denied.headers['x-reason'], denied.headers['retry-after']]).toEqual(['quota', '61']);
      } finally {
        await served.close();
      }
    },
  );

  it("an onLimit that throws one error object for every denial: each 429 has its own denial's headers, not the first's", async () => {
    let now = T0;
    const shared = Object.assign(new Error('Slow down'), { status: 429, expose: true });
    const app = new KoaApp();
    app.silent = true;
    app.use(
      rateLimit({
        clock: () => now,
        key: (ctx) => ctx.path,
        algorithm: fixedWindow({ limit: 1, window: '10s' }),
        onLimit: () => {
          throw shared;
        },
      }),
    );
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const served = await serve(app.callback());
    try {
      const retryAfter = async (path: string) => {
        await served.request(path);
        return (await served.request(path)).headers['retry-after'];
      };
      now = Math.ceil(T0 / 10_000) * 10_000;
      expect(await retryAfter('/a')).toBe('10');
      now += 3_000;
      expect(await retryAfter('/b')).toBe('7');
      expect(shared).not.toHaveProperty('headers');
    } finally {
      await served.close();
    }
  });

  // Koa's own `ctx.onerror` answers nothing for a thrown null or undefined: the request would hang.
  it.each([
    ['a key function that rejects with undefined', { key: (): Promise<string> => Promise.reject(undefined) }, [500]],
    [
      'an onLimit that throws null (the second request)',
      {
        key: (): string => 'k',
        onLimit: (): never => {
          throw null;
        },
      },
      [200, 500],
    ],
  ])('answers 500 by default for %s', async (_name, options, statuses) => {
    const app = new KoaApp();
    app.silent = true;
    app.use(rateLimit({ clock, algorithm: fixedWindow({ limit: 1, window: '1m' }), ...options } as RateLimitOptions));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const served = await serve(app.callback());
    try {
      for (const status of statuses) expect((await served.request('/')).status).toBe(status);
    } finally {
      await served.close();
    }
  });
});
