import type { ServerResponse } from 'node:http';
import { Hono, type Context } from 'hono';
import { getRequestListener } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import {
  describeAdapter,
  headersOf,
  serve,
  statusOf,
  type Adapter,
  type AppSpec,
  type RequestView,
} from '@rl/test-support';
import { rateLimit, rateLimitOf, withRateLimit, type FetchRateLimitOptions, type RateLimitOptions } from './index.js';

/** What a Hono app on `@hono/node-server` has beside each request. */
interface NodeBindings {
  outgoing: ServerResponse;
}

const trustOf = (spec: AppSpec): boolean | number => (spec.trustProxy === 'all' ? true : spec.trustProxy ? 1 : false);

const honoView = (c: Context): RequestView => ({
  path: c.req.path,
  url: c.req.url.slice(c.req.url.indexOf('/', 8)),
  header: (name) => c.req.header(name),
  rateLimit: c.get('rateLimit'),
});

/** Errors as JSON with their code, like an app's error handler would. */
const errorAsJson = (error: Error & { code?: string }) =>
  Response.json({ error: error.message, code: error.code }, { status: 500 });

const hono: Adapter = {
  name: 'Hono on @hono/node-server',
  async mount(spec) {
    const app = new Hono<{ Bindings: NodeBindings }>();
    app.onError((error, c) => (c.res = errorAsJson(error)));
    app.use(async (c, next) => {
      spec.onArrival?.(honoView(c), c.env.outgoing);
      await next();
    });
    const trustProxy = trustOf(spec);
    const middlewares = spec.middlewares.map((options) => rateLimit({ trustProxy, ...options } as RateLimitOptions));
    for (const middleware of middlewares) app.use(middleware);
    app.all('*', async (c) => {
      const answer = await spec.handler?.(honoView(c));
      return c.json({ remaining: c.get('rateLimit')?.remaining ?? null }, statusOf(answer) as 200, headersOf(answer));
    });
    const served = await serve(getRequestListener(app.fetch));
    const handle = middlewares[0]!;
    return { ...served, peek: (key) => handle.limiter.limiters[0]!.peek(key), controls: handle };
  },
  view: (c) => honoView(c as Context),
  responseHeader: (args, name) => (args[0] as Context).res.headers.get(name) ?? undefined,
  logsToConsole: true,
  lateErrorsAsWarnings: true,
  namespaceOf: (options) => rateLimit(options as unknown as RateLimitOptions).limiter.prefix,
  onLimitSending: (body) => (c: Context, result: { retryAfterSeconds: number }) => c.json(body(result) as object),
};

const requestView = (request: Request): RequestView => ({
  path: new URL(request.url).pathname,
  url: request.url.slice(request.url.indexOf('/', 8)),
  header: (name) => request.headers.get(name) ?? undefined,
  rateLimit: rateLimitOf(request),
});

/** A plain Fetch handler (what `Bun.serve`, `Deno.serve` and Workers call), wrapped once per middleware, served on Node. */
const fetchHandler: Adapter = {
  name: 'withRateLimit (a Fetch handler on Node)',
  owner: 'withRateLimit',
  async mount(spec) {
    const trustProxy = trustOf(spec);
    let handler = async (request: Request, _env: NodeBindings): Promise<Response> => {
      const answer = await spec.handler?.(requestView(request));
      return Response.json(
        { remaining: rateLimitOf(request)?.remaining ?? null },
        { status: statusOf(answer), headers: headersOf(answer) },
      );
    };
    const wrapped = [...spec.middlewares].reverse().map((options) => {
      const limited = withRateLimit(handler, { trustProxy, ...options } as FetchRateLimitOptions);
      handler = limited;
      return limited;
    });
    const outermost = handler;
    const served = await serve(
      getRequestListener(async (request, bindings) => {
        const env = bindings as NodeBindings;
        spec.onArrival?.(requestView(request), env.outgoing);
        try {
          return await outermost(request, env);
        } catch (error) {
          return errorAsJson(error as Error);
        }
      }),
    );
    const handle = wrapped[wrapped.length - 1]!;
    return { ...served, peek: (key) => handle.limiter.limiters[0]!.peek(key), controls: handle };
  },
  view: (request) => requestView(request as Request),
  responseHeader: (args, name) => (args[1] as Response).headers.get(name) ?? undefined,
  logsToConsole: true,
  lateErrorsAsWarnings: true,
  refusalsAsWarnings: true,
  namespaceOf: (options) =>
    withRateLimit(() => new Response(), options as unknown as FetchRateLimitOptions).limiter.prefix,
  onLimitSending: (body) => (_request: Request, result: { retryAfterSeconds: number }) => Response.json(body(result)),
};

describeAdapter([hono, fetchHandler], { redisStore: (client, prefix) => new RedisStore({ client, prefix }) });

// Hono hands only an Error to `app.onError`; a thrown undefined would be the runtime's bare 500.
describe("a user function's throw reaches the app's onError as an Error", () => {
  it.each([
    ['a key function that rejects with undefined', { key: (): Promise<string> => Promise.reject(undefined) }, 1],
    [
      'an onLimit that throws null (the second request)',
      {
        key: (): string => 'k',
        onLimit: (): never => {
          throw null;
        },
      },
      2,
    ],
  ])('%s', async (_name, options, requests) => {
    const app = new Hono();
    const heard: unknown[] = [];
    app.onError((error, c) => {
      heard.push(error);
      return c.text('handled', 500);
    });
    app.use(rateLimit({ algorithm: fixedWindow({ limit: 1, window: '1m' }), ...options } as RateLimitOptions));
    app.get('/', (c) => c.text('ok'));
    let last: Response | undefined;
    for (let i = 0; i < requests; i++) last = await app.request('/');
    expect([last!.status, await last!.text()]).toEqual([500, 'handled']);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeInstanceOf(Error);
  });
});
