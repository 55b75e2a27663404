// Adversarial cases of the Fetch adapters: what a Node adapter gets from its ServerResponse and a
// Fetch runtime must be told (HEAD, a Request handled twice, rl middlewares of both entries on one request).
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { timeout } from 'hono/timeout';
import { describe, expect, it } from 'vitest';
import { concurrency, fixedWindow, type Algorithm } from '@rl/core';
import { collectWarnings, deferred, members, nextTurn } from '@rl/test-support';
import { rateLimit, rateLimitOf, withRateLimit } from './index.js';
import { appSeeingKeys } from './test-apps.js';

const clock = () => 1_000_000;
/** One limit named `name`, on the one key `k` and the test's clock. */
const named = (name: string, algorithm: Algorithm) => ({ limits: [{ name, algorithm }], key: () => 'k', clock });
const oneAtATime = { algorithm: concurrency({ limit: 1, lease: '1m' }), key: () => 'k', clock };

describe('a HEAD request', () => {
  it('gives its concurrency permit back at once on Hono (whose HEAD drops the GET route body unread)', async () => {
    const app = new Hono();
    app.use(rateLimit(oneAtATime));
    app.get('/', (c) => c.text('ok'));
    const head = await app.request('/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
    expect(members(head.headers.get('ratelimit'))[0]!.params.r).toBe(0);
    // Before the fix the permit stayed taken until its lease (1 minute): every request after one HEAD was a 429.
    expect((await app.request('/')).status).toBe(200);
  });

  it('gives its permit back at once through withRateLimit, whatever the runtime does with the body', async () => {
    const handler = withRateLimit(() => new Response('ok'), oneAtATime);
    const head = await handler(new Request('http://app/', { method: 'HEAD' }));
    expect(head.status).toBe(200);
    // The runtime sends no body for a HEAD and may never read it.
    expect((await handler(new Request('http://app/'))).status).toBe(200);
  });
});

describe('withRateLimit called again with a Request it answered', () => {
  it('counts it as a new request: its own headers, no stale exchange, no double-count warning', async () => {
    const handler = withRateLimit(() => new Response('ok'), {
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      key: () => 'k',
      clock,
    });
    const request = new Request('http://app/');
    await collectWarnings('RL_DOUBLE_COUNT', async (warnings) => {
      const first = await handler(request);
      await first.text();
      expect(rateLimitOf(request)?.remaining).toBe(4);
      const second = await handler(request);
      await nextTurn();
      // Before the fix: `"5-in-1m";r=4;t=20, "5-in-1m";r=3;t=20` (the first call's member kept) and an RL_DOUBLE_COUNT warning.
      expect(members(second.headers.get('ratelimit')).map((member) => member.params.r)).toEqual([3]);
      expect(members(second.headers.get('ratelimit-policy'))).toHaveLength(1);
      expect(rateLimitOf(request)?.remaining).toBe(3);
      expect(warnings).toEqual([]);
    });
  });
});

describe('rl middlewares of both entries on one request', () => {
  it('merges a withRateLimit handler called from a Hono route with the Hono middleware around it', async () => {
    const app = new Hono();
    app.use(rateLimit(named('outer', fixedWindow({ limit: 10, window: '1m' }))));
    const inner = withRateLimit(() => new Response('ok'), named('inner', fixedWindow({ limit: 1, window: '1m' })));
    app.all('/api/*', (c) => inner(c.req.raw));
    const admitted = await app.request('/api/x');
    expect(admitted.status).toBe(200);
    expect(members(admitted.headers.get('ratelimit')).map((m) => [m.name, m.params.r])).toEqual([
      ['outer', 9],
      ['inner', 0],
    ]);
    const denied = await app.request('/api/x');
    expect(denied.status).toBe(429);
    // Before the fix the outer middleware's headers replaced the inner's: a 429 saying only `"outer";r=8`.
    expect(members(denied.headers.get('ratelimit')).map((m) => [m.name, m.params.r])).toEqual([
      ['outer', 8],
      ['inner', 0],
    ]);
    expect(members(denied.headers.get('ratelimit-policy')).map((m) => m.name)).toEqual(['outer', 'inner']);
  });

  it('merges a Hono app wrapped by withRateLimit, and releases each permit once', async () => {
    const app = new Hono();
    app.use(rateLimit(named('app', concurrency({ limit: 1, lease: '1m' }))));
    app.get('/', (c) => c.text('ok'));
    const handler = withRateLimit(
      (request: Request) => app.fetch(request),
      named('edge', concurrency({ limit: 1, lease: '1m' })),
    );
    for (let i = 0; i < 3; i++) {
      const response = await handler(new Request('http://app/'));
      expect(response.status).toBe(200);
      expect(members(response.headers.get('ratelimit')).map((m) => [m.name, m.params.r])).toEqual([
        ['edge', 0],
        ['app', 0],
      ]);
      await response.text();
    }
  });
});

describe('a response answered before the handler returned', () => {
  it('(hono/timeout in front) gives the permit back when the handler ends, with no throw from the middleware', async () => {
    const app = new Hono();
    const errors: unknown[] = [];
    app.onError((error, c) => {
      if (error instanceof HTTPException) return error.getResponse();
      errors.push(error);
      return c.text('error', 500);
    });
    const slow = deferred();
    let calls = 0;
    app.use(timeout(1));
    app.use(rateLimit(oneAtATime));
    app.get('/', async (c) => {
      if (calls++ === 0) await slow.promise;
      return c.text('ok');
    });
    const timedOut = await app.request('/');
    expect(timedOut.status).toBe(504);
    await timedOut.text();
    // The handler answers after its client got the 504: the middleware finds that response's body being read.
    slow.resolve();
    await nextTurn();
    // Before the fix: "ReadableStream is locked" thrown from the middleware, and the permit held until its lease (every request a 429).
    expect(errors).toEqual([]);
    expect((await app.request('/')).status).toBe(200);
  });
});

describe('the client address a runtime gives', () => {
  it("reads Bun's server passed beside other bindings as c.env.server (hono/bun's getBunServer)", async () => {
    const { app, seen } = appSeeingKeys({ algorithm: concurrency({ limit: 5, lease: '1m' }), clock });
    const server = { requestIP: () => ({ address: '203.0.113.9', family: 'IPv4', port: 50_000 }) };
    // `Bun.serve({ fetch: (request, server) => app.fetch(request, { server, DB }) })`: before the fix, no address (InvalidKeyError, a 500).
    const response = await app.request('/', {}, { server, DB: {} });
    expect(response.status).toBe(200);
    expect(seen.keys).toEqual(['203.0.113.9']);
  });
});

describe('a handler that throws a non-Error (past app.onError: the runtime answers 500)', () => {
  it('shows requestWasSuccessful(c) the 500 as c.res, so skipSuccessfulRequests keeps it counted', async () => {
    const statuses: number[] = [];
    const app = new Hono();
    app.use(
      rateLimit({
        algorithm: fixedWindow({ limit: 5, window: '1m' }),
        key: () => 'k',
        clock,
        skipSuccessfulRequests: true,
        requestWasSuccessful: (c) => {
          statuses.push(c.res.status);
          return c.res.status < 400;
        },
      }),
    );
    app.get('/throw', () => {
      throw 'boom';
    });
    app.get('/', (c) => c.text('ok'));
    await expect(app.request('/throw')).rejects.toBe('boom');
    // Before the fix c.res was Hono's default 200: the failure counted as a success and its unit given back (r=4 below).
    expect(statuses).toEqual([500]);
    expect(members((await app.request('/')).headers.get('ratelimit'))[0]!.params.r).toBe(3);
  });
});

describe('a denial on Hono', () => {
  it("keeps the headers earlier middlewares set with c.header() (hono/request-id's X-Request-Id), as the handler's responses do", async () => {
    const app = new Hono();
    app.use(async (c, next) => {
      c.header('X-Request-Id', 'req-1');
      c.header('Set-Cookie', 'session=1', { append: true });
      await next();
    });
    app.use(rateLimit({ algorithm: fixedWindow({ limit: 1, window: '1m' }), key: () => 'k', clock }));
    const custom = new Hono();
    custom.use(async (c, next) => {
      c.header('Set-Cookie', 'session=1', { append: true });
      await next();
    });
    custom.use(
      rateLimit({
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        key: () => 'k',
        clock,
        onLimit: (c) => c.json({ slow: 'down' }),
      }),
    );
    custom.get('/', (c) => c.text('ok'));
    app.get('/', (c) => c.text('ok'));
    expect((await app.request('/')).headers.get('x-request-id')).toBe('req-1');
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    expect(denied.headers.get('retry-after')).not.toBeNull();
    // Before the fix the default denial was a Response made apart from Hono's context: it had none of them.
    expect(denied.headers.get('x-request-id')).toBe('req-1');
    expect(denied.headers.getSetCookie()).toEqual(['session=1']);
    // An onLimit answering through the context has them already: not twice.
    await (await custom.request('/')).text();
    const customDenied = await custom.request('/');
    expect(customDenied.status).toBe(429);
    expect(customDenied.headers.getSetCookie()).toEqual(['session=1']);
    expect(await customDenied.json()).toEqual({ slow: 'down' });
  });
});

describe('withRateLimit around a Bun WebSocket upgrade', () => {
  it('passes on the handler answering no Response (`if (server.upgrade(request)) return;`) and gives the permit back', async () => {
    const upgrade = ((_request: Request) => undefined) as unknown as (request: Request) => Response;
    const handler = withRateLimit(upgrade, oneAtATime);
    // Before the fix: a TypeError (reading the status of undefined), and the permit held until its lease.
    await expect(handler(new Request('http://app/chat'))).resolves.toBeUndefined();
    await expect(handler(new Request('http://app/chat'))).resolves.toBeUndefined();
  });
});
