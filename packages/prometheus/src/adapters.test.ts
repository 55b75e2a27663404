/**
 * The exporter behind each real framework: a known sequence of requests, then a scrape of the
 * registry that finds the exact counts, on the memory store and on a real Redis.
 */
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedWindow, leakyBucket, type Store } from '@rl/core';
import { rateLimit as expressLimit } from '@rl/express';
import fastifyLimit from '@rl/fastify';
import { rateLimit as koaLimit } from '@rl/koa';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import { request, serve, useRedis, type ServedApp } from '@rl/test-support';
import { prometheusObserver } from './index.js';

const T0 = 1_800_000_000_000;
const clock = (): number => T0;

/** One app per framework whose every route passes `options`, served on 127.0.0.1; `/metrics` serves the registry. */
const frameworks: Record<string, (options: Record<string, unknown>, registry: Registry) => Promise<ServedApp>> = {
  'Express 5': async (options, registry) => {
    const app = express();
    app.get('/metrics', async (_req, res) => {
      res.type(registry.contentType).send(await registry.metrics());
    });
    app.use(expressLimit(options as never));
    app.get('/', (_req, res) => void res.json({}));
    return serve(app);
  },
  'Fastify 5': async (options, registry) => {
    const app = Fastify();
    await app.register(fastifyLimit, options as never);
    app.get('/metrics', { config: { rateLimit: false } }, async (_request, reply) =>
      reply.type(registry.contentType).send(await registry.metrics()),
    );
    app.get('/', async () => ({}));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      url,
      request: (path, init) => request(url, path, init),
      close: async () => {
        app.server.closeAllConnections();
        await app.close();
      },
    };
  },
  'Koa 3': async (options, registry) => {
    const app = new Koa();
    const limit = koaLimit(options as never);
    app.use(async (ctx, next) => {
      if (ctx.path !== '/metrics') return limit(ctx, next);
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
    });
    app.use((ctx) => {
      ctx.body = {};
    });
    return serve(app.callback());
  },
};

/** The value of one series in the exposition text, or undefined when absent. */
function series(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const redis = useRedis('rl-prometheus-adapters');
const stores: [string, () => Promise<Store>][] = [
  ['memory store', async () => new MemoryStore()],
  ['Redis store', () => listening(new RedisStore({ client: redis.client, prefix: redis.freshPrefix() }))],
];

/**
 * `store` once it hears the notices of resets (its subscription live): a deny cache answers nothing
 * before, so without this the first denial of a fresh store would be asked of Redis again.
 */
async function listening(store: RedisStore): Promise<RedisStore> {
  let live!: () => void;
  const heard = new Promise<void>((resolve) => (live = resolve));
  // Held in this frame until heard: a store holds its listeners weakly.
  const listener = (key: string | undefined, hearing?: boolean): void => {
    if (key === undefined && hearing !== false) live();
  };
  store.watchResets(listener);
  await heard;
  return store;
}

describe.each(Object.entries(frameworks))('%s', (_name, open) => {
  const opened: ServedApp[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((app) => app.close()));
  });

  it.each(stores)('counts each limit’s decisions by outcome, on the %s, as scraped', async (label, store) => {
    const registry = new Registry();
    const app = await open(
      {
        store: await store(),
        clock,
        timeout: '5s',
        observer: prometheusObserver({ registry }),
        key: () => 'ann',
        limits: [
          { name: 'user', algorithm: fixedWindow({ limit: 3, window: '1h' }) },
          { name: 'new', algorithm: fixedWindow({ limit: 1, window: '1h' }), dryRun: true },
        ],
      },
      registry,
    );
    opened.push(app);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await app.request('/')).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    const text = (await app.request('/metrics')).text;
    expect(series(text, 'rl_decisions_total', 'limit="user",outcome="allowed"')).toBe(3);
    expect(series(text, 'rl_decisions_total', 'limit="user",outcome="denied"')).toBe(3);
    expect(series(text, 'rl_decisions_total', 'limit="new",outcome="allowed"')).toBe(1);
    expect(series(text, 'rl_decisions_total', 'limit="new",outcome="dry_run_denied"')).toBe(2);
    // On Redis the third denial comes from the deny cache: no store call to time. (The first denial
    // registers the cache with the store, which then forgets what it held: it may have missed a reset.)
    expect(series(text, 'rl_store_duration_seconds_count', 'limit="user"')).toBe(label === 'Redis store' ? 5 : 6);
    expect(text).not.toContain('ann');
  });

  it('counts the delayed requests and their delays', async () => {
    const registry = new Registry();
    const app = await open(
      {
        store: new MemoryStore(),
        clock,
        observer: prometheusObserver({ registry }),
        key: () => 'ann',
        algorithm: leakyBucket({ capacity: 5, leakRate: 1000, interval: '1s', mode: 'shape' }),
        wait: { maxDelay: '5ms' },
      },
      registry,
    );
    opened.push(app);
    for (let i = 0; i < 3; i++) expect((await app.request('/')).status).toBe(200);
    const text = (await app.request('/metrics')).text;
    const limit = /rl_decisions_total\{limit="([^"]+)",outcome="delayed"\}/.exec(text)![1]!;
    expect(series(text, 'rl_decisions_total', `limit="${limit}",outcome="allowed"`)).toBe(1);
    expect(series(text, 'rl_decisions_total', `limit="${limit}",outcome="delayed"`)).toBe(2);
    // Held 1 ms and 2 ms: 0.003 s in all, none held any more.
    expect(series(text, 'rl_delay_seconds_sum', `limit="${limit}"`)).toBeCloseTo(0.003, 6);
    expect(series(text, 'rl_held_requests', `limit="${limit}"`)).toBe(0);
  });
});
