// What only the Fetch adapters have: per-route Hono middleware, a streamed body that holds a permit
// until it ends, Hono's own middleware around it, responses with immutable headers, trustProxy,
// clientAddress.
import { gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { compress } from 'hono/compress';
import { requestId } from 'hono/request-id';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { concurrency, fixedWindow, type Algorithm } from '@rl/core';
import { deferred, keysSeen, members } from '@rl/test-support';
import { rateLimit, withRateLimit } from './index.js';
import { appSeeingKeys } from './test-apps.js';

const clock = () => 1_000_000;
/** One limit named `name`, on the one key `k` and the test's clock. */
const named = (name: string, algorithm: Algorithm) => ({ limits: [{ name, algorithm }], key: () => 'k', clock });

describe('rateLimit on Hono', () => {
  it('limits one route and leaves the others alone', async () => {
    const app = new Hono();
    app.post('/export', rateLimit({ algorithm: fixedWindow({ limit: 1, window: '1m' }), key: () => 'k', clock }), (c) =>
      c.json({ remaining: c.get('rateLimit')?.remaining }),
    );
    app.get('/', (c) => c.text('free'));
    expect(await (await app.request('/export', { method: 'POST' })).json()).toEqual({ remaining: 0 });
    expect((await app.request('/export', { method: 'POST' })).status).toBe(429);
    expect((await app.request('/')).status).toBe(200);
    expect((await app.request('/')).headers.get('ratelimit')).toBeNull();
  });

  it('holds a concurrency permit until a streamed body ends, and releases it when the stream is cancelled', async () => {
    const app = new Hono();
    app.use(rateLimit({ algorithm: concurrency({ limit: 1, lease: '1m' }), key: () => 'k', clock }));
    app.get(
      '/stream',
      () =>
        new Response(new ReadableStream({ pull: (controller) => controller.enqueue(new TextEncoder().encode('x')) })),
    );
    app.get('/', (c) => c.text('ok'));
    const streaming = await app.request('/stream');
    expect(streaming.status).toBe(200);
    // The body is still being sent: its permit is held.
    expect((await app.request('/')).status).toBe(429);
    const reader = streaming.body!.getReader();
    await reader.read();
    await reader.cancel();
    const after = await app.request('/');
    expect(after.status).toBe(200);
    await after.text();
    // A body read to its end gives its permit back too.
    expect((await app.request('/')).status).toBe(200);
  });

  // Hono's own middleware, in both orders: hono/request-id sets X-Request-Id before `next()` (`c.header()`);
  // hono/compress replaces `c.res` after it with a response whose body is the old one, gzipped.
  it.each(['inside', 'outside'] as const)(
    "composes with Hono's own middleware before and after next(), rl %s them",
    async (place) => {
      const app = new Hono();
      const limited = rateLimit({ algorithm: concurrency({ limit: 1, lease: '1m' }), key: () => 'k', clock });
      if (place === 'outside') app.use(limited);
      app.use(requestId({ generator: () => 'req-1' }));
      app.use(compress({ encoding: 'gzip' }));
      if (place === 'inside') app.use(limited);
      const last = deferred();
      const parts = ['one ', 'two ', 'three'];
      app.get('/', (c) => {
        const body = new ReadableStream<Uint8Array>({
          pull: async (controller) => {
            // The last part waits: until then the body has not ended.
            if (parts.length === 1) await last.promise;
            const part = parts.shift();
            if (part === undefined) controller.close();
            else controller.enqueue(new TextEncoder().encode(part));
          },
        });
        // Through the context, which carries what `c.header()` set (a `new Response` would not: Hono's own rule).
        return c.body(body, 200, { 'content-type': 'text/plain' });
      });
      const streaming = await app.request('/', { headers: { 'accept-encoding': 'gzip' } });
      expect(streaming.status).toBe(200);
      expect(streaming.headers.get('content-encoding')).toBe('gzip');
      expect(streaming.headers.get('x-request-id')).toBe('req-1');
      expect(members(streaming.headers.get('ratelimit'))[0]!.params.r).toBe(0);
      // Its body is still being sent: its permit is held.
      const denied = await app.request('/');
      expect(denied.status).toBe(429);
      expect(denied.headers.get('retry-after')).toBe('1');
      expect(members(denied.headers.get('ratelimit'))[0]!.params.r).toBe(0);
      // Inside, the denial comes after request-id set its header (kept, as on the handler's responses); outside, before it ran.
      expect(denied.headers.get('x-request-id')).toBe(place === 'inside' ? 'req-1' : null);
      last.resolve();
      expect(gunzipSync(Buffer.from(await streaming.arrayBuffer())).toString()).toBe('one two three');
      // The body read to its end (through the gzip stream, wherever it is) gave the permit back.
      expect((await app.request('/')).status).toBe(200);
    },
  );

  it('is just a middleware when two nest: the outer one writes beneath the inner one, whose denial it passes on and whose permit each releases once', async () => {
    const app = new Hono();
    app.use(rateLimit(named('outer', concurrency({ limit: 1, lease: '1m' }))));
    app.use(rateLimit(named('inner', fixedWindow({ limit: 1, window: '1m' }))));
    app.get('/', (c) => c.text('ok'));
    const admitted = await app.request('/');
    expect(members(admitted.headers.get('ratelimit')).map((m) => [m.name, m.params.r])).toEqual([
      ['outer', 0],
      ['inner', 0],
    ]);
    await admitted.text();
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    const [outerMember, innerMember] = members(denied.headers.get('ratelimit'));
    expect([outerMember!.name, outerMember!.params.r, innerMember!.name, innerMember!.params.r]).toEqual([
      'outer',
      0,
      'inner',
      0,
    ]);
    // The inner limit denied: the Retry-After is its.
    expect(denied.headers.get('retry-after')).toBe(String(innerMember!.params.t));
    expect(members(denied.headers.get('ratelimit-policy')).map((m) => m.name)).toEqual(['outer', 'inner']);
    // The outer permit of the denied request comes back when the denial's body has been read: the next
    // request passes the outer limit (the inner one denies it), and holds the permit while its body is unread.
    await denied.text();
    const again = await app.request('/');
    expect([again.status, members(again.headers.get('ratelimit-policy')).map((m) => m.name)]).toEqual([
      429,
      ['outer', 'inner'],
    ]);
    const outerDenied = await app.request('/');
    expect([outerDenied.status, members(outerDenied.headers.get('ratelimit-policy')).map((m) => m.name)]).toEqual([
      429,
      ['outer'],
    ]);
  });

  it('puts its headers on a response whose headers are immutable (a fetch() passed through)', async () => {
    const app = new Hono();
    app.use(rateLimit({ algorithm: fixedWindow({ limit: 5, window: '1m' }), key: () => 'k', clock }));
    app.get('/', () => {
      const upstream = new Response('from upstream');
      Object.defineProperty(upstream, 'headers', {
        value: new Proxy(new Headers(), {
          get: (target, name) =>
            name === 'set'
              ? () => {
                  throw new TypeError('immutable');
                }
              : (Reflect.get(target, name).bind?.(target) ?? Reflect.get(target, name)),
        }),
      });
      return upstream;
    });
    const response = await app.request('/');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('from upstream');
    expect(response.headers.get('ratelimit')).toMatch(/r=4/);
  });

  it('keys on the X-Forwarded-For entry of the trusted proxy, and not on a client-written one', async () => {
    const { app, seen } = appSeeingKeys({
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      trustProxy: 1,
      clientAddress: () => '10.0.0.1',
      clock,
    });
    await app.request('/', { headers: { 'x-forwarded-for': '6.6.6.6, 198.51.100.7' } });
    expect(seen.keys).toEqual(['198.51.100.7']);
  });

  it('refuses options that are no object with a typed error, as every adapter does', () => {
    expect(() => rateLimit(undefined as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit' }),
    );
    expect(() => withRateLimit(() => new Response(), null as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'withRateLimit' }),
    );
  });

  it('refuses a bad trustProxy or clientAddress when created', () => {
    expect(() => rateLimit({ algorithm: fixedWindow({ limit: 1, window: '1m' }), trustProxy: -1 })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit.trustProxy' }),
    );
    expect(() =>
      rateLimit({ algorithm: fixedWindow({ limit: 1, window: '1m' }), clientAddress: 'x' as never }),
    ).toThrow(expect.objectContaining({ field: 'rateLimit.clientAddress' }));
  });
});

describe('withRateLimit', () => {
  it('reads the client address a runtime passes beside the request (Bun.serve: the server)', async () => {
    const seen = keysSeen();
    const handler = withRateLimit((_request: Request, _runtime: object) => new Response('ok'), {
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      clock,
      ...seen.reporting,
    });
    const bunServer = { requestIP: () => ({ address: '203.0.113.9' }) };
    const deno = { remoteAddr: { hostname: '203.0.113.10' } };
    await handler(new Request('http://app/'), bunServer);
    await handler(new Request('http://app/'), deno);
    expect(seen.keys).toEqual(['203.0.113.9', '203.0.113.10']);
  });

  it('settles a cost read from the response once its body is sent', async () => {
    const handler = withRateLimit(() => new Response('done', { headers: { 'x-tokens': '7' } }), {
      algorithm: fixedWindow({ limit: 10, window: '1m' }),
      key: () => 'k',
      clock,
      actualCost: (_request, response) => Number(response.headers.get('x-tokens')),
    });
    const first = await handler(new Request('http://app/'));
    await first.text();
    const second = await handler(new Request('http://app/'));
    expect(second.headers.get('ratelimit')).toMatch(/r=2/);
  });

  // A Next.js route handler, or a Request made in code, comes with no client address.
  it('answers a request without a client address and without a key 500 with a problem+json body and its code, warned once', async () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    onTestFinished(() => warning.mockRestore());
    const handler = vi.fn(() => new Response('ok'));
    const limited = withRateLimit(handler, { algorithm: fixedWindow({ limit: 5, window: '1m' }), clock });
    for (let i = 0; i < 2; i++) {
      const res = await limited(new Request('https://api.example/'));
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toEqual({
        type: 'https://github.com/rl-js/rl/blob/main/docs/errors.md#rl_invalid_key',
        title: 'Internal Server Error',
        status: 500,
        detail: expect.stringContaining('give the middleware a `key` function'),
        code: 'RL_INVALID_KEY',
      });
    }
    expect(handler).not.toHaveBeenCalled();
    expect(warning).toHaveBeenCalledTimes(1);
    expect(warning.mock.calls[0]![0]).toMatchObject({ code: 'RL_INVALID_KEY' });
    // With a key, the same request is served.
    const keyed = withRateLimit(handler, {
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      clock,
      key: () => 'anonymous',
    });
    expect((await keyed(new Request('https://api.example/'))).status).toBe(200);
  });

  it("rejects with an error of the user's own key function, as before (the runtime answers 500 and logs it)", async () => {
    const limited = withRateLimit(() => new Response('ok'), {
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      clock,
      key: () => {
        throw new Error('no session');
      },
    });
    await expect(limited(new Request('https://api.example/'))).rejects.toThrow('no session');
  });
});
