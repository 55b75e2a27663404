// The apps of section 4 (over HTTP) and section 6 (in process): one framework, one variant, one mode.
//   framework: express | fastify | koa
//   variant:   bare | noop | hand | rl-memory | rl-observed (memory, with a counting observer) | rl-redis | peer-memory | peer-redis
//   mode:      allow (limit never reached) | deny (limit 1 per day: nearly everything rejected)
// GET / answers "ok".

/**
 * Builds the app. `redis`: an ioredis client for the Redis variants. Returns `listen()` (resolves
 * with the port, on 127.0.0.1) and `injector()`, which resolves with `inject(path)`: one request in
 * process, without a socket (light-my-request, as Fastify's own `inject`), resolving with the status.
 */
export async function buildApp({ framework, variant, mode, redis }) {
  const deny = mode === 'deny';
  const LIMIT = deny ? 1 : 1_000_000_000;
  const WINDOW_MS = deny ? 86_400_000 : 60_000;
  async function rlOptions() {
    const { fixedWindow } = await import('@rl/core');
    // Fixed window, like every peer here; a limit of 10^9 per minute admits everything.
    const options = { algorithm: fixedWindow({ limit: LIMIT, window: WINDOW_MS }) };
    if (variant === 'rl-observed') {
      const { countingObserver } = await import('../lib/memory-contenders.mjs');
      options.observer = countingObserver();
    }
    if (variant === 'rl-redis') {
      const { RedisStore } = await import('@rl/store-redis');
      options.store = new RedisStore({ client: redis });
      // The peers have no client-side timeout; on this loaded 2-core machine rl's default 50 ms one
      // trips the failure policy (503 for a second), so it is off here, like theirs.
      options.timeout = false;
    }
    return options;
  }

  /** A hand-written bucket with its three headers: the near-limit reference for the added CPU. */
  function handBucket() {
    const buckets = new Map();
    const rate = LIMIT / WINDOW_MS;
    return (key) => {
      const now = Date.now();
      let b = buckets.get(key);
      if (b === undefined) buckets.set(key, (b = { tokens: LIMIT, last: now }));
      else if (now > b.last) {
        b.tokens = Math.min(LIMIT, b.tokens + (now - b.last) * rate);
        b.last = now;
      }
      const ok = b.tokens >= 1;
      if (ok) b.tokens -= 1;
      return { ok, remaining: Math.floor(b.tokens), reset: Math.ceil((LIMIT - b.tokens) / rate / 1000) };
    };
  }

  let listen;
  /** The app as a Node request listener (Express, Koa); Fastify injects through itself. */
  let dispatch;
  let fastify;
  if (framework === 'express') {
    const express = (await import('express')).default;
    const app = express();
    if (variant === 'noop') {
      // An empty middleware: what any middleware costs in Express before it does anything.
      app.use((req, res, next) => next());
    } else if (variant === 'hand') {
      const take = handBucket();
      app.use((req, res, next) => {
        const r = take(req.ip);
        res.setHeader('RateLimit-Limit', LIMIT);
        res.setHeader('RateLimit-Remaining', r.remaining);
        res.setHeader('RateLimit-Reset', r.reset);
        if (r.ok) next();
        else res.status(429).send('Too Many Requests');
      });
    } else if (variant.startsWith('rl-')) {
      const { rateLimit } = await import('@rl/express');
      app.use(rateLimit(await rlOptions()));
    } else if (variant.startsWith('peer-')) {
      const { rateLimit } = await import('express-rate-limit');
      const options = { windowMs: WINDOW_MS, limit: LIMIT };
      if (redis) {
        const { RedisStore } = await import('rate-limit-redis');
        options.store = new RedisStore({ sendCommand: (command, ...args) => redis.call(command, ...args) });
      }
      app.use(rateLimit(options));
    }
    app.get('/', (req, res) => res.send('ok'));
    listen = () => new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s.address().port)); });
    dispatch = app;
  } else if (framework === 'fastify') {
    const Fastify = (await import('fastify')).default;
    const app = Fastify({ logger: false });
    fastify = app;
    if (variant === 'noop') {
      app.addHook('onRequest', (request, reply, done) => done());
    } else if (variant === 'hand') {
      const take = handBucket();
      app.addHook('onRequest', (request, reply, done) => {
        const r = take(request.ip);
        reply.header('RateLimit-Limit', LIMIT);
        reply.header('RateLimit-Remaining', r.remaining);
        reply.header('RateLimit-Reset', r.reset);
        if (r.ok) done();
        else reply.code(429).send('Too Many Requests');
      });
    } else if (variant.startsWith('rl-')) {
      const { rateLimit } = await import('@rl/fastify');
      await app.register(rateLimit, await rlOptions());
    } else if (variant.startsWith('peer-')) {
      const fastifyRateLimit = (await import('@fastify/rate-limit')).default;
      await app.register(fastifyRateLimit, { max: LIMIT, timeWindow: WINDOW_MS, ...(redis ? { redis } : {}) });
    }
    app.get('/', async () => 'ok');
    listen = async () => {
      await app.listen({ port: 0, host: '127.0.0.1' });
      return app.server.address().port;
    };
  } else if (framework === 'koa') {
    const Koa = (await import('koa')).default;
    const app = new Koa();
    if (variant === 'noop') {
      app.use((ctx, next) => next());
    } else if (variant === 'hand') {
      const take = handBucket();
      app.use((ctx, next) => {
        const r = take(ctx.ip);
        ctx.set('RateLimit-Limit', String(LIMIT));
        ctx.set('RateLimit-Remaining', String(r.remaining));
        ctx.set('RateLimit-Reset', String(r.reset));
        if (r.ok) return next();
        ctx.status = 429;
        ctx.body = 'Too Many Requests';
      });
    } else if (variant.startsWith('rl-')) {
      const { rateLimit } = await import('@rl/koa');
      app.use(rateLimit(await rlOptions()));
    } else if (variant.startsWith('peer-')) {
      const ratelimit = (await import('koa-ratelimit')).default;
      app.use(ratelimit({ driver: redis ? 'redis' : 'memory', db: redis ?? new Map(), duration: WINDOW_MS, max: LIMIT, id: (ctx) => ctx.ip }));
    }
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    listen = () => new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s.address().port)); });
    dispatch = app.callback();
  } else {
    throw new Error(`unknown framework ${framework}`);
  }
  /** Prepares `inject` (the servers of section 4 never need it). */
  async function injector() {
    if (fastify !== undefined) {
      await fastify.ready();
      return async (path) => (await fastify.inject({ method: 'GET', url: path, remoteAddress: '127.0.0.1' })).statusCode;
    }
    const { default: lightInject } = await import('light-my-request');
    return async (path) => (await lightInject(dispatch, { method: 'GET', url: path, remoteAddress: '127.0.0.1' })).statusCode;
  }
  return { listen, injector };
}
