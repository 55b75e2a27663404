// HTTP servers for section 4 (and bench/http-ab.mjs), in one process.
// argv: <framework> <variant> <mode> [redisPort] [redisDb]
//   framework: express | fastify | koa | hono
//   variant:   bare | noop | hand | rl-memory | rl-observed (memory, with a counting observer) | rl-noop-observed (a no-op
//              observer) | rl-prometheus (@rl/prometheus's observer) |
//              rl-prometheus-counts (the same, storeDurations: false) | rl-redis | peer-memory | peer-redis
//              or a comma-separated list of <variant>:<mode>, one app (and port) each, in one process
//   mode:      allow (limit never reached) | deny (limit 1 per day: nearly everything rejected)
//   redisDb:   the Redis database of this server (the section runs several servers at once, each its own)
// Prints `READY <port>[,<port>...]` (in the order of the list) once listening on 127.0.0.1. GET / answers "ok".
import Redis from 'ioredis';

const [framework, variantArg, modeArg, redisPort, redisDb = '0'] = process.argv.slice(2);
const apps = variantArg.split(',').map((item) => {
  const [variant, mode = modeArg] = item.split(':');
  return { variant, mode };
});
const redis = apps.some(({ variant }) => variant.endsWith('redis'))
  ? new Redis({ host: '127.0.0.1', port: Number(redisPort), db: Number(redisDb) })
  : undefined;
if (redis) await redis.flushdb();

/** 'allow': a limit of 10^9 per minute admits everything; 'deny': 1 per day rejects all but the first request. */
function settings(mode) {
  const deny = mode === 'deny';
  return { LIMIT: deny ? 1 : 1_000_000_000, WINDOW_MS: deny ? 86_400_000 : 60_000 };
}

async function rlOptionsFor(variant, LIMIT, WINDOW_MS) {
  const { fixedWindow } = await import('@rl/core');
  // Fixed window, like every peer here.
  const options = { algorithm: fixedWindow({ limit: LIMIT, window: WINDOW_MS }) };
  if (variant === 'rl-observed') {
    const { countingObserver } = await import('../lib/memory-contenders.mjs');
    options.observer = countingObserver();
  }
  if (variant === 'rl-noop-observed') options.observer = { decision() {} };
  if (variant.startsWith('rl-prometheus')) {
    const { prometheusObserver, promClient } = await import('../lib/exporters.mjs');
    const storeDurations = variant !== 'rl-prometheus-counts';
    options.observer = prometheusObserver({ registry: new promClient.Registry(), storeDurations });
  }
  // Experiments: options merged in from RL_BENCH_OPTIONS (JSON; `key: "ip"` a key function returning the client's address as is).
  if (process.env.RL_BENCH_OPTIONS) {
    const extra = JSON.parse(process.env.RL_BENCH_OPTIONS);
    if (extra.key === 'ip') extra.key = (req) => req.ip ?? req.socket?.remoteAddress ?? '';
    Object.assign(options, extra);
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
function handBucketFor(LIMIT, WINDOW_MS) {
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

/** One app of `framework` with `variant` in front of GET /; resolves with the port it listens on. */
async function serve(variant, mode) {
  const { LIMIT, WINDOW_MS } = settings(mode);
  const rlOptions = () => rlOptionsFor(variant, LIMIT, WINDOW_MS);
  const handBucket = () => handBucketFor(LIMIT, WINDOW_MS);
  let listen;
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
    listen = () =>
      new Promise((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s.address().port));
      });
  } else if (framework === 'fastify') {
    const Fastify = (await import('fastify')).default;
    const app = Fastify({ logger: false });
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
      app.use(
        ratelimit({
          driver: redis ? 'redis' : 'memory',
          db: redis ?? new Map(),
          duration: WINDOW_MS,
          max: LIMIT,
          id: (ctx) => ctx.ip,
        }),
      );
    }
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    listen = () =>
      new Promise((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s.address().port));
      });
  } else if (framework === 'hono') {
    const { Hono } = await import('hono');
    const { serve: serveNode } = await import('@hono/node-server');
    const app = new Hono();
    const address = (c) => c.env.incoming.socket.remoteAddress;
    if (variant === 'noop') {
      app.use((c, next) => next());
    } else if (variant === 'hand') {
      const take = handBucket();
      app.use(async (c, next) => {
        const r = take(address(c));
        c.header('RateLimit-Limit', String(LIMIT));
        c.header('RateLimit-Remaining', String(r.remaining));
        c.header('RateLimit-Reset', String(r.reset));
        if (!r.ok) return c.text('Too Many Requests', 429);
        await next();
      });
    } else if (variant.startsWith('rl-')) {
      const { rateLimit } = await import('@rl/hono');
      app.use(rateLimit(await rlOptions()));
    } else if (variant.startsWith('peer-')) {
      // hono-rate-limiter keeps its counts in memory (its Redis store is another package); keyed on the same address.
      const { rateLimiter } = await import('hono-rate-limiter');
      app.use(rateLimiter({ windowMs: WINDOW_MS, limit: LIMIT, standardHeaders: 'draft-6', keyGenerator: address }));
    }
    app.get('/', (c) => c.text('ok'));
    listen = () =>
      new Promise((resolve) =>
        serveNode({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port)),
      );
  } else {
    throw new Error(`unknown framework ${framework}`);
  }
  return listen();
}

const ports = [];
for (const { variant, mode } of apps) ports.push(await serve(variant, mode));
if (process.env.RL_BENCH_ALLOC === '1') await answerAllocationQueries();
process.stdout.write(`READY ${ports.join(',')}\n`);
process.on('SIGTERM', () => {
  redis?.disconnect();
  process.exit(0);
});

/**
 * Heap bytes allocated by this process between a `mark` and a `read` line on stdin (run with
 * --expose-gc and a young generation large enough that no collection happens in between): `mark`
 * collects, waits for the collection's report, and answers `MARKED`; `read` answers
 * `ALLOC <bytes> <collections since the mark>` (bytes are only exact when that count is 0).
 */
async function answerAllocationQueries() {
  const v8 = await import('node:v8');
  const { PerformanceObserver } = await import('node:perf_hooks');
  const { createInterface } = await import('node:readline');
  let collections = 0;
  new PerformanceObserver((list) => (collections += list.getEntries().length)).observe({ entryTypes: ['gc'] });
  let start = 0;
  createInterface({ input: process.stdin }).on('line', async (line) => {
    if (line === 'mark') {
      globalThis.gc();
      await new Promise((r) => setTimeout(r, 50));
      collections = 0;
      start = v8.getHeapStatistics().used_heap_size;
      process.stdout.write('MARKED\n');
    } else if (line === 'read') {
      process.stdout.write(`ALLOC ${v8.getHeapStatistics().used_heap_size - start} ${collections}\n`);
    }
  });
}
