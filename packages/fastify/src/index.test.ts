import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency, fixedWindow, StoreError, tokenBucket, type Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import {
  collectWarnings,
  deferred,
  describeAdapter,
  expectUncounted,
  headersOf,
  injectClient,
  members,
  nextTurn,
  request,
  startRequest,
  statusOf,
  T0,
  useRedis,
  type Adapter,
  type Inject,
  type MiddlewareOptions,
} from '@rl/test-support';
import rateLimit, { type RateLimitPluginOptions } from './index.js';

const clock = (): number => T0;

const view = (request: FastifyRequest) => ({
  path: request.url.split('?')[0]!,
  url: request.url,
  header: (name: string) => request.headers[name] as string | undefined,
  rateLimit: request.rateLimit,
});

/**
 * Registers one plugin per options object, each in a context inside the previous one's, so that all
 * apply to the routes of the innermost. Each registration puts its hook before the rl hooks already on
 * a route (after the route's own), and a parent's run first: to run the middlewares in the order
 * given, the last is registered outermost.
 */
async function registerNested(
  context: FastifyInstance,
  middlewares: readonly MiddlewareOptions[],
  routes: (context: FastifyInstance) => void,
): Promise<void> {
  if (middlewares.length === 0) return routes(context);
  await context.register(rateLimit, middlewares[0] as RateLimitPluginOptions);
  if (middlewares.length === 1) return routes(context);
  await context.register(async (child) => registerNested(child, middlewares.slice(1), routes));
}

/**
 * Fastify as the suite runs it: listening on a socket, or served through `app.inject()` (how Fastify
 * apps are tested, and how serverless adapters such as @fastify/aws-lambda serve every request).
 */
const fastifyAdapter = (served: 'socket' | 'inject'): Adapter => ({
  name: served === 'socket' ? 'Fastify 5' : 'Fastify 5 through inject()',
  inject: served === 'inject',
  async mount(spec) {
    const app = Fastify(spec.trustProxy ? { trustProxy: spec.trustProxy === 'all' ? true : '127.0.0.1' } : {});
    try {
      app.addHook('onRequest', async (request, reply) => spec.onArrival?.(view(request), reply.raw));
      app.setErrorHandler((error: Error & { code?: string }, _request, reply) =>
        reply.code(500).send({ error: error.message, code: error.code }),
      );
      await registerNested(app, [...spec.middlewares].reverse(), (context) => {
        context.route({
          method: ['GET', 'POST'],
          url: '/*',
          handler: async (request, reply) => {
            const answer = await spec.handler?.(view(request));
            void reply.headers(headersOf(answer)).code(statusOf(answer));
            return { remaining: request.rateLimit?.remaining ?? null };
          },
        });
      });
      if (served === 'inject') {
        await app.ready();
        return {
          ...injectClient(app.inject.bind(app) as unknown as Inject),
          controls: app.rateLimit,
          close: () => app.close(),
        };
      }
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      return {
        url,
        request: (path, init) => request(url, path, init),
        controls: app.rateLimit,
        async close() {
          app.server.closeAllConnections();
          await app.close();
        },
      };
    } catch (error) {
      await app.close();
      throw error;
    }
  },
  view: (request) => view(request as FastifyRequest),
  responseHeader: (args, name) => (args[1] as FastifyReply).getHeader(name) as string | undefined,
  logsToConsole: false,
  onLimitSending: (body) => (_request: FastifyRequest, _reply: unknown, result: { retryAfterSeconds: number }) =>
    body(result),
});

describeAdapter([fastifyAdapter('socket'), fastifyAdapter('inject')], {
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
});

const redis = useRedis('rl-fastify-test');

// What only Fastify has: per-route config, hooks, its error handler and logger, nested contexts, onClose.
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function appWith(
  options: RateLimitPluginOptions,
  configure?: (app: FastifyInstance) => void,
  serverOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify(serverOptions);
  apps.push(app);
  await app.register(rateLimit, { clock, ...options });
  app.get('/', async (request) => ({ remaining: request.rateLimit?.remaining ?? null }));
  configure?.(app);
  await app.ready();
  return app;
}

describe('@rl/fastify', () => {
  it("an onLimit that throws an Error answers 500 through Fastify's default error handler, as on every adapter (the denial's 429 was set already)", async () => {
    const app = await appWith({
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      onLimit: () => {
        throw new Error('onLimit failed');
      },
    });
    expect((await app.inject('/')).statusCode).toBe(200);
    expect((await app.inject('/')).statusCode).toBe(500);
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

    it('on the Redis store: a route cost spends the plugin limit, then 429 with Retry-After equal to t', async () => {
      const store = new RedisStore({ client: redis.client, prefix: redis.freshPrefix() });
      const app = await appWith({ store, timeout: '5s', algorithm: fixedWindow({ limit: 6, window: '1m' }) }, (a) => {
        a.get('/export', { config: { rateLimit: { cost: 5 } } }, async () => 'csv');
      });
      expect(members((await app.inject('/export')).headers['ratelimit'])).toEqual([
        { name: '6-in-1m', params: { r: 1, t: 60 } },
      ]);
      expect(members((await app.inject('/')).headers['ratelimit'])[0]!.params.r).toBe(0);
      const denied = await app.inject('/');
      expect(denied.statusCode).toBe(429);
      expect(denied.headers['retry-after']).toBe('60');
      expect(members(denied.headers['ratelimit'])[0]!.params.t).toBe(60);
    });

    it('disables the limit on a route with rateLimit: false, and gives a route its own algorithm its own state', async () => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, (a) => {
        a.get('/free', { config: { rateLimit: false } }, async () => 'free');
        a.get(
          '/own',
          { config: { rateLimit: { algorithm: fixedWindow({ limit: 2, window: '1m' }) } } },
          async () => 'own',
        );
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

    it("runs after the route's own hooks (as @fastify/rate-limit): a route's auth hook keys the limit, and what it refuses is not charged", async () => {
      const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
        const user = request.headers['x-user'];
        if (user === undefined) return reply.code(401).send('who?');
        (request as FastifyRequest & { user?: string }).user = String(user);
      };
      for (const hook of ['onRequest', 'preHandler'] as const) {
        const app = await appWith(
          {
            hook,
            algorithm: fixedWindow({ limit: 1, window: '1m' }),
            key: (request) => (request as FastifyRequest & { user: string }).user,
          },
          (a) => a.get('/me', { [hook]: [authenticate] }, async () => 'me'),
        );
        expect((await app.inject('/me')).statusCode, hook).toBe(401);
        expect((await app.inject({ url: '/me', headers: { 'x-user': 'ann' } })).statusCode, hook).toBe(200);
        expect((await app.inject({ url: '/me', headers: { 'x-user': 'bob' } })).statusCode, hook).toBe(200);
        expect((await app.inject({ url: '/me', headers: { 'x-user': 'ann' } })).statusCode, hook).toBe(429);
      }
    });

    it('one options object given to two routes makes a limit for each, as their namespaces say; a HEAD route spends its GET', async () => {
      const strict = { rateLimit: { algorithm: fixedWindow({ limit: 1, window: '1m' }) } };
      const app = await appWith({ prefix: 'app', algorithm: fixedWindow({ limit: 100, window: '1m' }) }, (a) => {
        a.post('/login', { config: strict }, async () => 'in');
        a.post('/reset-password', { config: strict }, async () => 'sent');
        a.get('/report', { config: strict }, async () => 'csv');
      });
      expect((await app.inject({ method: 'POST', url: '/login' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/reset-password' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/login' })).statusCode).toBe(429);
      expect((await app.inject({ method: 'HEAD', url: '/report' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/report' })).statusCode).toBe(429);
    });

    it('routes of one url told apart by a constraint (version) have a limit each', async () => {
      const own = { rateLimit: { algorithm: fixedWindow({ limit: 1, window: '1m' }) } };
      const app = await appWith({ prefix: 'app', algorithm: fixedWindow({ limit: 100, window: '1m' }) }, (a) => {
        a.get('/x', { constraints: { version: '1.0.0' }, config: { rateLimit: { ...own.rateLimit } } }, async () => 1);
        a.get('/x', { constraints: { version: '2.0.0' }, config: { rateLimit: { ...own.rateLimit } } }, async () => 2);
      });
      const get = (version: string) => app.inject({ url: '/x', headers: { 'accept-version': version } });
      expect((await get('1.0.0')).statusCode).toBe(200);
      expect((await get('2.0.0')).statusCode).toBe(200);
      expect((await get('1.0.0')).statusCode).toBe(429);
    });

    it("under a plugin prefix, a route with its own algorithm keeps its state apart, under '<prefix>:<METHOD url>'", async () => {
      const store = new MemoryStore();
      const own = fixedWindow({ limit: 3, window: '1m' });
      const app = await appWith(
        { store, key: () => 'client', prefix: 'app', algorithm: fixedWindow({ limit: 100, window: '1m' }) },
        (a) => {
          a.get('/own', { config: { rateLimit: { algorithm: own } } }, async () => 'own');
          // The same limit, named by its namespace: it shares /own's counts.
          a.get('/twin', { config: { rateLimit: { algorithm: own, prefix: 'app:GET /own' } } }, async () => 'twin');
        },
      );
      try {
        for (let i = 0; i < 5; i++) expect((await app.inject('/')).statusCode).toBe(200);
        // Before, the route's limit ran under the plugin's 'app': its first request saw the 5 counted there, and was denied.
        expect(members((await app.inject('/own')).headers['ratelimit'])).toEqual([
          { name: '3-in-1m', params: { r: 2, t: 60 } },
        ]);
        expect(members((await app.inject('/twin')).headers['ratelimit'])).toEqual([
          { name: '3-in-1m', params: { r: 1, t: 60 } },
        ]);
        expect(members((await app.inject('/')).headers['ratelimit'])).toEqual([
          { name: '100-in-1m', params: { r: 94, t: 60 } },
        ]);
      } finally {
        store.close();
      }
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

  it('runs in preHandler on request, so a key can read the parsed body; onLimit may send itself', async () => {
    const app = await appWith(
      {
        global: false,
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onLimit: (_request, reply) => reply.code(429).send({ sentBy: 'onLimit' }),
      },
      (a) => {
        a.post(
          '/login',
          {
            config: {
              rateLimit: { hook: 'preHandler', key: (request) => String((request.body as { user: string }).user) },
            },
          },
          async () => 'ok',
        );
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

  it('groups IPv6 clients by /56 (configurable), keyed on the socket address', async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
    expect((await app.inject({ url: '/', remoteAddress: '2001:db8:abcd:1200::1' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/', remoteAddress: '2001:db8:abcd:12ff::2' })).statusCode).toBe(429);
    expect((await app.inject({ url: '/', remoteAddress: '2001:db8:abcd:1300::1' })).statusCode).toBe(200);
    const by64 = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }), ipv6Subnet: 64 });
    expect((await by64.inject({ url: '/', remoteAddress: '2001:db8:abcd:1200::1' })).statusCode).toBe(200);
    expect((await by64.inject({ url: '/', remoteAddress: '2001:db8:abcd:1201::1' })).statusCode).toBe(200);
  });

  it('trusts X-Forwarded-For from the proxy addresses Fastify is given; a number of proxies trusts nothing, and the warning says so', async () => {
    const algorithm = fixedWindow({ limit: 1, window: '1m' });
    const from = (app: FastifyInstance, client: string) =>
      app.inject({ url: '/', remoteAddress: '10.0.0.2', headers: { 'x-forwarded-for': client } });
    const byAddress = await appWith({ algorithm }, undefined, { trustProxy: '10.0.0.0/8' });
    expect((await from(byAddress, '203.0.113.1')).statusCode).toBe(200);
    expect((await from(byAddress, '203.0.113.2')).statusCode).toBe(200);
    await collectWarnings('RL_TRUST_PROXY', async (warnings) => {
      const byCount = await appWith({ algorithm }, undefined, { trustProxy: 1 });
      expect((await from(byCount, '203.0.113.1')).statusCode).toBe(200);
      // Fastify 5 ignored the header: both clients are the proxy.
      expect((await from(byCount, '203.0.113.2')).statusCode).toBe(429);
      await nextTurn();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toMatch(/addresses or CIDRs/);
      expect(warnings[0]!.message).not.toMatch(/<number of proxies/);
    });
  });

  it('does not warn when a trusted proxy forwards a client whose address is its own', async () => {
    await collectWarnings('RL_TRUST_PROXY', async (warnings) => {
      const app = await appWith({ algorithm: fixedWindow({ limit: 5, window: '1m' }) }, undefined, {
        trustProxy: '10.0.0.0/8',
      });
      // request.ip is the socket's address here, yet the header was read (request.ips has both).
      expect(
        (await app.inject({ url: '/', remoteAddress: '10.0.0.2', headers: { 'x-forwarded-for': '10.0.0.2' } }))
          .statusCode,
      ).toBe(200);
      await nextTurn();
      expect(warnings).toEqual([]);
    });
  });

  describe("errors through Fastify's default error handler and logger", () => {
    it('answers 500 when the key function throws, charging nothing', async () => {
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

    it('answers 503 with Retry-After when a fail-closed store fails, and logs it once per outage on Fastify’s logger', async () => {
      const broken: Store = {
        capabilities: { local: true, algorithms: ['fixed-window'] },
        charge: () => {
          throw new StoreError('connection refused');
        },
        peek: () => undefined as never,
        giveBack: () => undefined,
        reset: () => undefined,
        acquire: () => undefined as never,
        release: () => undefined,
      };
      const logs: { msg: string; action?: string }[] = [];
      const stream = { write: (line: string) => void logs.push(JSON.parse(line)) };
      const app = await appWith({ store: broken, algorithm: fixedWindow({ limit: 5, window: '1m' }) }, undefined, {
        logger: { level: 'warn', stream },
      });
      const res = await app.inject('/');
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      for (let i = 0; i < 4; i++) expect((await app.inject('/')).statusCode).toBe(503);
      expect(logs).toEqual([
        expect.objectContaining({
          msg: expect.stringMatching(/the store of limit "5-in-1m" failed/),
          action: 'deny',
          limit: '5-in-1m',
        }),
      ]);
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
        await expect(app.register(rateLimit, options as unknown as RateLimitPluginOptions)).rejects.toMatchObject({
          code: 'RL_INVALID_OPTION',
          field,
        });
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

describe('registration without await', () => {
  const limitOfOne = { clock, algorithm: fixedWindow({ limit: 1, window: '1m' }) };
  const statuses = async (app: FastifyInstance, url: string, n: number) => {
    const seen: number[] = [];
    for (let i = 0; i < n; i++) seen.push((await app.inject(url)).statusCode);
    return seen;
  };

  it.each([
    [
      'routes declared after a register that is not awaited',
      (app: FastifyInstance) => {
        void app.register(rateLimit, limitOfOne);
        app.get('/', async () => 'ok');
      },
    ],
    [
      'routes declared before the register',
      (app: FastifyInstance) => {
        app.get('/', async () => 'ok');
        void app.register(rateLimit, limitOfOne);
      },
    ],
  ])('limits %s', async (_name, build) => {
    const app = Fastify();
    apps.push(app);
    build(app);
    await app.ready();
    const first = await app.inject('/');
    expect(first.statusCode).toBe(200);
    expect(members(first.headers['ratelimit'])).toEqual([{ name: '1-in-1m', params: { r: 0, t: 60 } }]);
    expect(await statuses(app, '/', 2)).toEqual([429, 429]);
  });

  /** The names of the hook functions Fastify lists for the routes, once each. */
  const hookNames = (app: FastifyInstance) =>
    [...new Set([...app.printRoutes({ includeHooks: true }).matchAll(/"(\w+)\(\)"/g)].map((m) => m[1]))].sort();

  it('adds no instance hooks when every route is declared after the plugin loaded: a request runs one rl hook', async () => {
    const app = Fastify();
    apps.push(app);
    await app.register(rateLimit, limitOfOne);
    app.get('/', async () => 'ok');
    await app.ready();
    expect(hookNames(app)).toEqual(['headRouteOnSendHandler', 'rateLimitHook']);
  });

  it('adds no property to the request or the reply for a plain limit: the shapes Fastify built stay as they are', async () => {
    const ownKeys = (target: object) => Reflect.ownKeys(target).map(String).sort();
    const shapes = async (options?: RateLimitPluginOptions) => {
      const app = Fastify();
      apps.push(app);
      if (options !== undefined) await app.register(rateLimit, options);
      let seen: { request: string[]; reply: string[] } | undefined;
      app.get('/', async (request, reply) => {
        seen = { request: ownKeys(request), reply: ownKeys(reply) };
        return 'ok';
      });
      expect((await app.inject('/')).statusCode).toBe(200);
      return seen!;
    };
    const bare = await shapes();
    // `rateLimit` is a decorator, on the prototype until rl sets it on the request.
    expect(await shapes({ algorithm: fixedWindow({ limit: 10, window: '1m' }) })).toEqual({
      request: [...bare.request, 'rateLimit'].sort(),
      reply: bare.reply,
    });
    // A concurrency limit keeps what it waits for on the Node response (reply.raw), not on the request or the reply.
    expect(await shapes({ algorithm: concurrency({ limit: 2 }) })).toEqual({
      request: [...bare.request, 'rateLimit'].sort(),
      reply: bare.reply,
    });
  });

  it('adds them when a route was declared before; the routes declared after keep their own hook', async () => {
    const app = Fastify();
    apps.push(app);
    app.get('/early', async () => 'early');
    await app.register(rateLimit, limitOfOne);
    app.get('/', async () => 'ok');
    await app.ready();
    expect(hookNames(app)).toEqual([
      'headRouteOnSendHandler',
      'rateLimitHook',
      'rateLimitRouteDeclaredBefore',
      'rateLimitRouteDeclaredBeforeInPreHandler',
    ]);
    // Both spend the plugin's one limit of 1.
    expect(await statuses(app, '/early', 1)).toEqual([200]);
    expect(await statuses(app, '/', 1)).toEqual([429]);
  });

  it("applies such a route's config: a cost, false, its own limit, preHandler, a concurrency permit released on close", async () => {
    const app = Fastify();
    apps.push(app);
    void app.register(rateLimit, { clock, algorithm: fixedWindow({ limit: 10, window: '1m' }) });
    app.get('/export', { config: { rateLimit: { cost: 5 } } }, async () => 'csv');
    app.get('/free', { config: { rateLimit: false } }, async () => 'free');
    app.post(
      '/login',
      {
        config: {
          rateLimit: {
            hook: 'preHandler',
            algorithm: fixedWindow({ limit: 1, window: '1m' }),
            key: (request) => String((request.body as { user: string }).user),
          },
        },
      },
      async () => 'ok',
    );
    app.get('/slow', { config: { rateLimit: { algorithm: concurrency({ limit: 1 }) } } }, async () => 'slow');
    await app.ready();
    expect(await statuses(app, '/export', 3)).toEqual([200, 200, 429]);
    expect((await app.inject('/free')).headers['ratelimit']).toBeUndefined();
    const login = (user: string) => app.inject({ method: 'POST', url: '/login', payload: { user } });
    expect([(await login('ann')).statusCode, (await login('ann')).statusCode, (await login('bob')).statusCode]).toEqual(
      [200, 429, 200],
    );
    // One permit: each request gets it back when its response closes.
    expect(await statuses(app, '/slow', 3)).toEqual([200, 200, 200]);
  });

  it('answers 500 for bad options of such a route (they are read at its first request)', async () => {
    const app = Fastify();
    apps.push(app);
    void app.register(rateLimit, limitOfOne);
    app.get('/bad', { config: { rateLimit: { cost: -1 } } }, async () => 'x');
    await app.ready();
    const res = await app.inject('/bad');
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ code: 'RL_INVALID_OPTION' });
  });
});

describe("a route's limits", () => {
  it("replace the plugin's limits for that route (as @fastify/rate-limit: a route's config overrides the global one)", async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, (a) => {
      a.get(
        '/search',
        { config: { rateLimit: { limits: [{ name: 'search', algorithm: fixedWindow({ limit: 3, window: '1m' }) }] } } },
        async () => 'found',
      );
    });
    for (let i = 0; i < 3; i++) {
      const res = await app.inject('/search');
      expect(res.statusCode).toBe(200);
      // Only the route's limit runs and shows.
      expect(members(res.headers['ratelimit-policy']).map((m) => m.name)).toEqual(['search']);
    }
    expect((await app.inject('/search')).statusCode).toBe(429);
    // The plugin's limit was not charged by /search.
    expect((await app.inject('/')).statusCode).toBe(200);
    expect((await app.inject('/')).statusCode).toBe(429);
  });
});

describe('a concurrency permit guards the handler, not the connection', () => {
  it('an async handler that returns nothing after its client left (Fastify then sends nothing) gives its permit back when its promise settles', async () => {
    const store = new MemoryStore();
    const release = vi.spyOn(store, 'release');
    const started = deferred();
    const closed = deferred();
    const gate = deferred();
    const app = Fastify();
    apps.push(app);
    await app.register(rateLimit, { clock, store, algorithm: concurrency({ limit: 1 }), key: () => 'k' });
    app.get('/work', async (_request, reply) => {
      reply.raw.on('close', () => closed.resolve());
      started.resolve();
      await gate.promise;
    });
    app.get('/', async () => 'ok');
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const client = startRequest(url, '/work');
    await started.promise;
    client.destroy();
    await closed.promise;
    // Its client is gone, its handler still runs: the permit is still taken.
    expect((await request(url, '/')).status).toBe(429);
    expect(release).not.toHaveBeenCalled();
    gate.resolve();
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    await Promise.all(release.mock.results.map((call) => call.value));
    expect((await request(url, '/')).status).toBe(200);
    app.server.closeAllConnections();
  });
});

describe('requests that end in 404', () => {
  it('are not counted by default', async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
    await expectUncounted(injectClient(app.inject.bind(app) as unknown as Inject), '/nope', 404);
  });

  it("are counted by the plugin's limit with setNotFoundHandler({ preHandler: app.rateLimit() }), sharing the routes' state", async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 3, window: '1m' }) }, (a) => {
      a.setNotFoundHandler({ preHandler: a.rateLimit() }, (_request, reply) =>
        reply.code(404).send({ error: 'not found' }),
      );
    });
    expect((await app.inject('/')).statusCode).toBe(200);
    const probe = await app.inject('/wp-admin');
    expect(probe.statusCode).toBe(404);
    expect(members(probe.headers['ratelimit'])).toEqual([{ name: '3-in-1m', params: { r: 1, t: 60 } }]);
    expect((await app.inject('/.env')).statusCode).toBe(404);
    const denied = await app.inject('/phpmyadmin');
    expect(denied.statusCode).toBe(429);
    expect(denied.headers['retry-after']).toBe('60');
    expect((await app.inject('/')).statusCode).toBe(429);
  });

  it('can have a stricter limit of their own: app.rateLimit(options) merges them over the plugin options', async () => {
    const app = await appWith({ algorithm: fixedWindow({ limit: 100, window: '1m' }) }, (a) => {
      a.setNotFoundHandler(
        { preHandler: a.rateLimit({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }) },
        (_request, reply) => reply.code(404).send('?'),
      );
    });
    expect((await app.inject('/a')).statusCode).toBe(404);
    expect((await app.inject('/b')).statusCode).toBe(429);
    expect((await app.inject('/')).statusCode).toBe(200);
    expect(() => app.rateLimit({ cost: -1 })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'fastify.rateLimit(options).cost' }),
    );
  });
});

describe('fastify.rateLimit.resetKey', () => {
  it('forgets a key in every limit of the app: the plugin, a route of its own, a nested registration', async () => {
    const app = Fastify();
    apps.push(app);
    const key = (request: FastifyRequest) => String(request.headers['x-user'] ?? 'anonymous');
    await app.register(rateLimit, {
      clock,
      key,
      algorithm: fixedWindow({ limit: 1, window: '1h' }),
      prefix: 'reset-parent',
    });
    app.get('/', async () => 'ok');
    app.get(
      '/own',
      { config: { rateLimit: { algorithm: fixedWindow({ limit: 1, window: '1h' }), prefix: 'reset-own' } } },
      async () => 'ok',
    );
    await app.register(async (child) => {
      // A limit of another name than the parent's, which also runs on '/child' (the same name would be RL_DOUBLE_COUNT).
      await child.register(rateLimit, {
        clock,
        key,
        limits: [{ name: 'child', algorithm: fixedWindow({ limit: 1, window: '1h' }) }],
        prefix: 'reset-child',
      });
      child.get('/child', async () => 'ok');
    });
    await app.ready();
    const as = (user: string, url: string) =>
      app.inject({ url, headers: { 'x-user': user } }).then((reply) => reply.statusCode);
    for (const url of ['/', '/own']) expect(await as('ann', url)).toBe(200);
    // '/child' is limited by the parent's plugin too, whose unit '/' spent.
    expect([await as('ann', '/'), await as('ann', '/own'), await as('ann', '/child'), await as('bob', '/')]).toEqual([
      429, 429, 429, 200,
    ]);
    await app.rateLimit.resetKey('ann');
    expect([await as('ann', '/own'), await as('ann', '/child'), await as('ann', '/'), await as('bob', '/')]).toEqual([
      200, 200, 429, 429,
    ]);
  });

  it("rejects with the store's error when a limit's store fails", async () => {
    const failing: Store = Object.assign(new MemoryStore(), {
      reset: async () => {
        throw new StoreError('down');
      },
    });
    const app = await appWith({ store: failing, algorithm: fixedWindow({ limit: 1, window: '1h' }) });
    await expect(app.rateLimit.resetKey('127.0.0.1')).rejects.toBeInstanceOf(StoreError);
  });
});

describe('nested registration', () => {
  it("a child context can add a stricter limit on top of the parent's: both apply, headers append", async () => {
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
