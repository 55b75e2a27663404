import http from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { parseList } from 'structured-headers';
import { parseRateLimit } from 'ratelimit-header-parser';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, StoreError, tokenBucket, type Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import rateLimit, { type RateLimitPluginOptions } from './index.js';

/** Window-aligned fake time: fixed windows of 1m start exactly here. */
const T0 = 1_800_000_000_000;
const clock = (): number => T0;

function members(value: unknown): { name: string; params: Record<string, unknown> }[] {
  expect(value, 'header present').toBeTypeOf('string');
  return parseList(value as string).map(([item, params]) => ({ name: item as string, params: Object.fromEntries(params) }));
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function appWith(options: RateLimitPluginOptions, configure?: (app: FastifyInstance) => void, serverOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(serverOptions);
  apps.push(app);
  await app.register(rateLimit, { clock, ...options });
  app.get('/', async (request) => ({ remaining: request.rateLimit?.remaining ?? null }));
  configure?.(app);
  await app.ready();
  return app;
}

describe('@rl/fastify', () => {
  describe('headers and the 429 at the limit', () => {
    it('sends draft-8 headers, then 429 with Retry-After equal to t and a problem+json body', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 3, window: '1m' }) });
      for (let i = 1; i <= 3; i++) {
        const res = await app.inject('/');
        expect(res.statusCode).toBe(200);
        expect(members(res.headers['ratelimit-policy'])).toEqual([{ name: '3-in-1m', params: { q: 3, w: 60 } }]);
        expect(members(res.headers['ratelimit'])).toEqual([{ name: '3-in-1m', params: { r: 3 - i, t: 60 } }]);
        expect(res.json()).toEqual({ remaining: 3 - i });
      }
      const denied = await app.inject('/');
      expect(denied.statusCode).toBe(429);
      expect(members(denied.headers['ratelimit'])).toEqual([{ name: '3-in-1m', params: { r: 0, t: 60 } }]);
      expect(denied.headers['retry-after']).toBe('60');
      expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(denied.json()).toMatchObject({ status: 429, retryAfter: 60 });
    });

    it.each(['draft-7', 'draft-6', 'legacy'] as const)('writes the %s format', async (format) => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 2, window: '1m' }), headers: format });
      const res = await app.inject('/');
      const parsed = parseRateLimit(res.headers as Record<string, string>, format === 'legacy' ? { reset: 'unix' } : { reset: 'seconds' });
      expect(parsed).toMatchObject({ limit: 2, remaining: 1, used: 1 });
      const resetIn = (parsed!.reset!.getTime() - Date.now()) / 1000;
      expect(resetIn).toBeGreaterThan(50);
      expect(resetIn).toBeLessThanOrEqual(61);
    });
  });

  describe('per-route config', () => {
    it('merges a route cost over the plugin options and spends the plugin limit', async () => {
      const app = await appWith({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }, (a) => {
        a.get('/export', { config: { rateLimit: { cost: 5 } } }, async () => 'csv');
      });
      const exported = await app.inject('/export');
      expect(members(exported.headers['ratelimit'])[0]!.params.r).toBe(15);
      const plain = await app.inject('/');
      expect(members(plain.headers['ratelimit'])[0]!.params.r).toBe(14);
    });

    it('disables the limit on a route with rateLimit: false, and gives a route its own algorithm its own state', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, (a) => {
        a.get('/free', { config: { rateLimit: false } }, async () => 'free');
        a.get('/own', { config: { rateLimit: { algorithm: fixedWindow({ limit: 2, window: '1m' }) } } }, async () => 'own');
      });
      expect((await app.inject('/')).statusCode).toBe(200);
      expect((await app.inject('/')).statusCode).toBe(429);
      const free = await app.inject('/free');
      expect(free.statusCode).toBe(200);
      expect(free.headers['ratelimit']).toBeUndefined();
      expect((await app.inject('/own')).statusCode).toBe(200);
      expect((await app.inject('/own')).statusCode).toBe(200);
      expect((await app.inject('/own')).statusCode).toBe(429);
    });

    it('limits only configured routes with global: false', async () => {
      const app = await appWith({ global: false, algorithm: fixedWindow({ limit: 1, window: '1m' }) }, (a) => {
        a.get('/limited', { config: { rateLimit: {} } }, async () => 'x');
      });
      expect((await app.inject('/')).headers['ratelimit']).toBeUndefined();
      expect((await app.inject('/limited')).statusCode).toBe(200);
      expect((await app.inject('/limited')).statusCode).toBe(429);
    });

    it('rejects bad route options when the route is declared', async () => {
      const app = Fastify();
      apps.push(app);
      await app.register(rateLimit, { algorithm: fixedWindow({ limit: 1, window: '1m' }) });
      let thrown: unknown;
      try {
        app.get('/bad', { config: { rateLimit: { cost: -1 } } }, async () => 'x');
        await app.ready();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'GET /bad config.rateLimit.cost' });
    });
  });

  describe('several limits, skip and custom handlers', () => {
    it('admits only when every limit admits, and a denial uses no quota in the others', async () => {
      const app = await appWith({
        limits: [
          { name: 'global', key: () => 'all', algorithm: fixedWindow({ limit: 10, window: '1m' }) },
          { name: 'user', key: (request) => String(request.headers['x-user']), algorithm: fixedWindow({ limit: 1, window: '1m' }) },
        ],
      });
      expect((await app.inject({ url: '/', headers: { 'x-user': 'ann' } })).statusCode).toBe(200);
      const denied = await app.inject({ url: '/', headers: { 'x-user': 'ann' } });
      expect(denied.statusCode).toBe(429);
      expect(members(denied.headers['ratelimit'])).toEqual([
        { name: 'global', params: { r: 9, t: 60 } },
        { name: 'user', params: { r: 0, t: 60 } },
      ]);
      const bob = await app.inject({ url: '/', headers: { 'x-user': 'bob' } });
      expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 8, t: 60 } });
    });

    it('lets skipped requests through uncounted', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), skip: (request) => request.url === '/health' }, (a) => {
        a.get('/health', async () => 'ok');
      });
      for (let i = 0; i < 3; i++) expect((await app.inject('/health')).headers['ratelimit']).toBeUndefined();
      expect((await app.inject('/')).statusCode).toBe(200);
    });

    it('sends what onLimit returns, with the status and headers already set', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), onLimit: (_request, _reply, result) => ({ slowDown: result.retryAfterSeconds }) });
      await app.inject('/');
      const denied = await app.inject('/');
      expect(denied.statusCode).toBe(429);
      expect(denied.json()).toEqual({ slowDown: 60 });
      expect(denied.headers['retry-after']).toBe('60');
    });
  });

  it('runs in preHandler on request, so a key can read the parsed body; onLimit may send itself', async () => {
    const app = await appWith(
      {
        global: false,
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onLimit: (_request, reply) => reply.code(429).send({ sentBy: 'onLimit' }),
      },
      (a) => {
        a.post('/login', { config: { rateLimit: { hook: 'preHandler', key: (request) => String((request.body as { user: string }).user) } } }, async () => 'ok');
      },
    );
    const login = (user: string) => app.inject({ method: 'POST', url: '/login', payload: { user } });
    expect((await login('ann')).statusCode).toBe(200);
    const denied = await login('ann');
    expect(denied.statusCode).toBe(429);
    expect(denied.json()).toEqual({ sentBy: 'onLimit' });
    expect(denied.headers['retry-after']).toBe('60');
    expect((await login('bob')).statusCode).toBe(200);
  });

  describe('client IP keys', () => {
    it('groups IPv6 clients by /56 (configurable)', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
      expect((await app.inject({ url: '/', remoteAddress: '2001:db8:abcd:1200::1' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/', remoteAddress: '2001:db8:abcd:12ff::2' })).statusCode).toBe(429);
      expect((await app.inject({ url: '/', remoteAddress: '2001:db8:abcd:1300::1' })).statusCode).toBe(200);
      const by64 = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), ipv6Subnet: 64 });
      expect((await by64.inject({ url: '/', remoteAddress: '2001:db8:abcd:1200::1' })).statusCode).toBe(200);
      expect((await by64.inject({ url: '/', remoteAddress: '2001:db8:abcd:1201::1' })).statusCode).toBe(200);
    });

    it('uses X-Forwarded-For only under trustProxy, and warns once without it', async () => {
      const warnings: Error[] = [];
      const onWarning = (w: Error & { code?: string }): void => {
        if (w.code === 'RL_TRUST_PROXY') warnings.push(w);
      };
      process.on('warning', onWarning);
      try {
        const direct = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
        expect((await direct.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.1' } })).statusCode).toBe(200);
        expect((await direct.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.2' } })).statusCode).toBe(429);
        const proxied = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, undefined, { trustProxy: true });
        expect((await proxied.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.1' } })).statusCode).toBe(200);
        expect((await proxied.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.2' } })).statusCode).toBe(200);
        await new Promise((r) => setImmediate(r));
        expect(warnings).toHaveLength(1);
      } finally {
        process.off('warning', onWarning);
      }
    });
  });

  describe('waiting (shaping)', () => {
    it('holds a request for its delay, and rejects at once a delay beyond maxDelay', async () => {
      const app = await appWith({ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' });
      expect((await app.inject('/')).statusCode).toBe(200);
      expect((await app.inject('/')).statusCode).toBe(200); // held 50 ms
      const rejected = await app.inject('/');
      expect(rejected.statusCode).toBe(429);
      expect(rejected.headers['retry-after']).toBe('1');
    });

    it('never runs the handler of a client that leaves while held, and gives its slot back', async () => {
      const handler = vi.fn(async () => 'ran');
      const arrived = deferred();
      const closed = deferred();
      const app = Fastify();
      apps.push(app);
      app.addHook('onRequest', async (request, reply) => {
        if (request.headers['x-probe']) {
          arrived.resolve();
          reply.raw.on('close', closed.resolve);
        }
      });
      await app.register(rateLimit, { clock, algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '10s' }, key: () => 'k' });
      app.get('/', handler);
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      expect((await app.inject('/')).statusCode).toBe(200);
      expect(handler).toHaveBeenCalledTimes(1);
      const client = http.get(`${base}/`, { headers: { 'x-probe': '1' } });
      client.on('error', () => {});
      await arrived.promise;
      await new Promise((r) => setTimeout(r, 30));
      client.destroy();
      await closed.promise;
      await new Promise((r) => setTimeout(r, 400));
      expect(handler).toHaveBeenCalledTimes(1);
      // The slot was given back: the next request waits one interval again, not two.
      const next = await app.inject('/');
      expect(members(next.headers['ratelimit'])[0]!.params.r).toBe(3);
    });
  });

  describe('concurrency permits', () => {
    async function concurrencyApp(store: Store, handler: (url: string) => Promise<string>): Promise<FastifyInstance> {
      const app = Fastify();
      apps.push(app);
      await app.register(rateLimit, { clock, store, algorithm: concurrency({ limit: 1 }), key: () => 'k' });
      app.get('/*', async (request) => handler(request.url));
      return app;
    }

    it('releases the permit once when the response is sent, and when the handler throws', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const gate = deferred();
      const started = deferred();
      const app = await concurrencyApp(store, async (url) => {
        if (url === '/slow') {
          started.resolve();
          await gate.promise;
        }
        if (url === '/fail') throw new Error('boom');
        return 'done';
      });
      const slow = app.inject('/slow');
      await started.promise;
      expect((await app.inject('/')).statusCode).toBe(429);
      gate.resolve();
      expect((await slow).statusCode).toBe(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      expect((await app.inject('/fail')).statusCode).toBe(500);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(2));
      expect((await app.inject('/')).statusCode).toBe(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(3));
    });

    it('releases the permit when the client disconnects', async () => {
      const store = new MemoryStore();
      const release = vi.spyOn(store, 'release');
      const started = deferred();
      const app = await concurrencyApp(store, async (url) => {
        if (url === '/hang') {
          started.resolve();
          await new Promise((r) => setTimeout(r, 200));
        }
        return 'ok';
      });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const client = http.get(`${base}/hang`);
      client.on('error', () => {});
      await started.promise;
      expect((await app.inject('/')).statusCode).toBe(429);
      client.destroy();
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
      expect((await app.inject('/')).statusCode).toBe(200);
      await new Promise((r) => setTimeout(r, 250)); // the abandoned handler finishes: still released once
      expect(release).toHaveBeenCalledTimes(2);
    });
  });

  it('gives the permit back when the client leaves while the limits run', async () => {
    const store = new MemoryStore();
    const release = vi.spyOn(store, 'release');
    const handler = vi.fn(async () => 'ok');
    const arrived = deferred();
    const gone = deferred();
    const app = Fastify();
    apps.push(app);
    app.addHook('onRequest', async (_request, reply) => {
      reply.raw.on('close', gone.resolve);
    });
    // The key resolves only once the client has gone: its 'close' is already past when the permit is taken.
    await app.register(rateLimit, { clock, store, algorithm: concurrency({ limit: 1 }), key: async () => (arrived.resolve(), await gone.promise, 'k') });
    app.get('/', handler);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const client = http.get(`${base}/`);
    client.on('error', () => {});
    await arrived.promise;
    client.destroy();
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    await new Promise((r) => setTimeout(r, 50));
    expect(handler).not.toHaveBeenCalled();
    expect(release).toHaveBeenCalledTimes(1);
  });

  describe('errors', () => {
    it('answers 500 through the error handler when the key function throws, charging nothing', async () => {
      const app = await appWith({
        algorithm: fixedWindow({ limit: 5, window: '1m' }),
        key: (request) => {
          if (!request.headers['x-user']) throw new Error('no user');
          return String(request.headers['x-user']);
        },
      });
      const res = await app.inject('/');
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ message: 'no user' });
      const ok = await app.inject({ url: '/', headers: { 'x-user': 'ann' } });
      expect(members(ok.headers['ratelimit'])[0]!.params.r).toBe(4);
    });

    it('answers 500 with the error code when the cost is not a number', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 5, window: '1m' }), cost: () => Number.NaN });
      const res = await app.inject('/');
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ code: 'RL_INVALID_COST' });
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
      const logs: { msg: string; action?: string }[] = [];
      const stream = { write: (line: string) => void logs.push(JSON.parse(line)) };
      const app = await appWith({ store: broken, algorithm: fixedWindow({ limit: 5, window: '1m' }) }, undefined, { logger: { level: 'warn', stream } });
      const res = await app.inject('/');
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(logs).toEqual([expect.objectContaining({ msg: 'rate-limit store failed', action: 'deny' })]);
    });

    it('rejects bad plugin options at registration', async () => {
      for (const [options, field] of [
        [{}, 'rateLimit.algorithm'],
        [{ algorithm: fixedWindow({ limit: 1, window: '1m' }), max: 5 }, 'rateLimit.max'],
        [{ algorithm: fixedWindow({ limit: 1, window: '1m' }), hook: 'onSend' }, 'rateLimit.hook'],
        [{ algorithm: fixedWindow({ limit: 1, window: '1m' }), global: 'yes' }, 'rateLimit.global'],
        [{ global: false, windowMs: 1000 }, 'rateLimit.windowMs'],
        [{ global: false, hook: 'onSend' }, 'rateLimit.hook'],
      ] as const) {
        const app = Fastify();
        apps.push(app);
        await expect(app.register(rateLimit, options as unknown as RateLimitPluginOptions)).rejects.toMatchObject({ code: 'RL_INVALID_OPTION', field });
      }
    });
  });

  it('closes the memory store it created when the server closes', async () => {
    const close = vi.spyOn(MemoryStore.prototype, 'close');
    try {
      const app = Fastify();
      await app.register(rateLimit, { algorithm: fixedWindow({ limit: 1, window: '1m' }) });
      await app.close();
      expect(close).toHaveBeenCalledTimes(1);
    } finally {
      close.mockRestore();
    }
  });
});

describe('nested registration', () => {
  it('a child context can add a stricter limit on top of the parent\'s: both apply, headers append', async () => {
    const app = Fastify();
    await app.register(rateLimit, { algorithm: fixedWindow({ limit: 100, window: '1m' }), prefix: 'nest-parent' });
    await app.register(async (child) => {
      await child.register(rateLimit, { algorithm: fixedWindow({ limit: 1, window: '1m' }), prefix: 'nest-child' });
      child.get('/child', async () => 'ok');
    });
    app.get('/parent', async () => 'ok');
    await app.ready();
    const first = await app.inject('/child');
    expect(first.statusCode).toBe(200);
    expect(String(first.headers['ratelimit-policy'])).toContain('"100-in-1m"');
    expect(String(first.headers['ratelimit-policy'])).toContain('"1-in-1m"');
    expect((await app.inject('/child')).statusCode).toBe(429);
    expect((await app.inject('/parent')).statusCode).toBe(200);
    await app.close();
  });
});
