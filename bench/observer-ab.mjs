// What an observer adds per decision, in one process: the same JIT, heap and moment for every
// contender, interleaved rounds (alternate order), so the machine's drift is out of the differences.
// In process: a memory-store token bucket (100k keys, everything admitted) without an observer, with a
// no-op observer (an empty `decision`), a counting observer (a Map by limit/outcome), an observer with
// only `storeError` (hears no decision), @rl/prometheus's and @rl/opentelemetry's observers (with and
// without store durations), by `await limiter.consume` and `limiter.consumeSync`.
// Over HTTP, in process (no socket: light-my-request drives each framework's own request handler, so the
// loopback's noise is out): Express, Fastify, Koa and Hono with @rl's middleware on the memory store,
// without an observer, with a no-op one and with @rl/prometheus's; µs per request added.
// Usage (after a build): nice -n 10 node bench/observer-ab.mjs [rounds=9] [sliceMs=150] [http=1]
import { createRequire } from 'node:module';
import path from 'node:path';
import { createLimiter, tokenBucket, fixedWindow } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { ipKey, median, ROOT_DIR, table } from './lib/common.mjs';
import { BIG, countingObserver } from './lib/memory-contenders.mjs';

const rounds = Number(process.argv[2] ?? 9);
const sliceMs = Number(process.argv[3] ?? 150);
const withHttp = (process.argv[4] ?? '1') !== '0';
const keys = Array.from({ length: 100_000 }, (_, i) => ipKey(i));

// The exporters and their metrics libraries are the packages' own dependencies, not the bench's.
const fromPackage = (name) => createRequire(path.join(ROOT_DIR, 'packages', name, 'package.json'));
const promClient = fromPackage('prometheus')('prom-client');
const { prometheusObserver } = await import(path.join(ROOT_DIR, 'packages/prometheus/dist/index.js'));
const { openTelemetryObserver } = await import(path.join(ROOT_DIR, 'packages/opentelemetry/dist/index.js'));
const otel = fromPackage('opentelemetry');
const { MeterProvider, InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } =
  otel('@opentelemetry/sdk-metrics');

/** Whether the built exporters take `storeDurations` (older builds do not: those rows are skipped). */
const takesStoreDurations = (make) => {
  try {
    make(false);
    return true;
  } catch {
    return false;
  }
};
const prometheus = (storeDurations) =>
  prometheusObserver({
    registry: new promClient.Registry(),
    ...(storeDurations === undefined ? {} : { storeDurations }),
  });
const openTelemetry = (storeDurations) => {
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 3_600_000,
  });
  const meter = new MeterProvider({ readers: [reader] }).getMeter('bench');
  return openTelemetryObserver({ meter, ...(storeDurations === undefined ? {} : { storeDurations }) });
};

/** The observers, by row name; undefined: no observer. */
const OBSERVERS = {
  none: () => undefined,
  'no-op': () => ({ decision() {} }),
  counting: () => countingObserver(),
  'storeError only': () => ({ storeError() {} }),
  prometheus: () => prometheus(),
  ...(takesStoreDurations(prometheus) ? { 'prometheus, storeDurations: false': () => prometheus(false) } : {}),
  opentelemetry: () => openTelemetry(),
  ...(takesStoreDurations(openTelemetry)
    ? { 'opentelemetry, storeDurations: false': () => openTelemetry(false) }
    : {}),
};

function limiterWith(observer) {
  const store = new MemoryStore({ maxKeys: 2_000_000, sweepInterval: false });
  return createLimiter({ algorithm: tokenBucket({ capacity: BIG, refillRate: BIG }), store, observer });
}

const AsyncFunction = (async () => {}).constructor;
/** A loop of its own per contender (its own type feedback): decisions per second over `ms`. */
function loopOf(awaited) {
  return new AsyncFunction(
    'call',
    'keys',
    'ms',
    `let ops = 0, i = 0;
    const n = keys.length, start = performance.now();
    let t = start;
    while (t < start + ms) {
      for (let j = 0; j < 1024; j++) {
        const d = ${awaited ? 'await ' : ''}call(keys[i]);
        if (d.allowed !== true) throw new Error('denied');
        if (++i === n) i = 0;
      }
      ops += 1024;
      t = performance.now();
    }
    return ((t - start) * 1000) / ops;`,
  );
}

/** Runs `runners` (each `{ run(ms) → µs per op, samples }`) in interleaved rounds, the order alternating. */
async function interleave(runners, warmMs) {
  for (const r of runners) await r.run(warmMs);
  for (let round = 0; round < rounds; round++)
    for (const r of round % 2 ? [...runners].reverse() : runners) r.samples.push(await r.run(sliceMs));
}

/** Per runner: median µs, and the median and range of its per-round difference over runner 0. */
function added(runners) {
  const base = runners[0].samples;
  return runners.map((r) => {
    const diffs = r.samples.map((x, i) => x - base[i]).sort((a, b) => a - b);
    return {
      name: r.name,
      us: median(r.samples),
      added: median(diffs),
      range: `${diffs[0].toFixed(2)} … ${diffs.at(-1).toFixed(2)}`,
      ratio: median(r.samples) / median(base),
    };
  });
}

const report = (title, rows) => {
  console.log(`\n${title}`);
  console.log(
    table(
      ['observer', 'µs', 'µs added (median)', 'added, min … max of rounds', '× none'],
      rows.map((r) => [r.name, r.us.toFixed(3), r.added.toFixed(3), r.range, r.ratio.toFixed(2)]),
    ),
  );
};

for (const verb of ['consumeSync', 'consume']) {
  const runners = Object.entries(OBSERVERS).map(([name, make]) => {
    const limiter = limiterWith(make());
    const call = verb === 'consume' ? (key) => limiter.consume(key) : (key) => limiter.consumeSync(key);
    const loop = loopOf(verb === 'consume');
    return { name, run: (ms) => loop(call, keys, ms), samples: [] };
  });
  await interleave(runners, 300);
  report(
    `in process, ${verb}, memory store, 100k keys, ${rounds} rounds of ${sliceMs} ms: µs per decision`,
    added(runners),
  );
}

if (withHttp) await http();
process.exit(0);

/** The HTTP rows: each framework's own handler driven by light-my-request (in process, no socket). */
async function http() {
  // Fastify's own injector, which takes any Node request handler.
  const inject = createRequire(createRequire(import.meta.url).resolve('fastify'))('light-my-request');
  const HTTP_OBSERVERS = { none: OBSERVERS.none, 'no-op': OBSERVERS['no-op'], prometheus: OBSERVERS.prometheus };
  const options = (observer) => ({ algorithm: fixedWindow({ limit: BIG, window: '1m' }), observer });
  const FRAMEWORKS = {
    async express(observer) {
      const express = (await import('express')).default;
      const { rateLimit } = await import('@rl/express');
      const app = express();
      app.use(rateLimit(options(observer)));
      app.get('/', (req, res) => res.send('ok'));
      return (request) => inject(app, request);
    },
    async fastify(observer) {
      const Fastify = (await import('fastify')).default;
      const { rateLimit } = await import('@rl/fastify');
      const app = Fastify({ logger: false });
      await app.register(rateLimit, options(observer));
      app.get('/', async () => 'ok');
      await app.ready();
      return (request) => app.inject(request);
    },
    async koa(observer) {
      const Koa = (await import('koa')).default;
      const { rateLimit } = await import('@rl/koa');
      const app = new Koa();
      app.use(rateLimit(options(observer)));
      app.use((ctx) => {
        ctx.body = 'ok';
      });
      const handler = app.callback();
      return (request) => inject(handler, request);
    },
    async hono(observer) {
      const { Hono } = await import('hono');
      const { rateLimit } = await import('@rl/hono');
      const app = new Hono();
      // The Fetch entry: no Node request to read an address from, so the key is a header's.
      app.use(rateLimit({ ...options(observer), key: (c) => c.req.header('x-client') ?? 'anonymous' }));
      app.get('/', (c) => c.text('ok'));
      return (request) =>
        app.request('http://bench.local/', { headers: { 'x-client': request.remoteAddress } }).then((r) => r.text());
    },
  };
  const requestLoop = async (send, ms) => {
    let n = 0;
    const start = performance.now();
    let t = start;
    while (t < start + ms) {
      for (let j = 0; j < 64; j++) {
        const res = await send({ method: 'GET', url: '/', remoteAddress: keys[n & 1023] });
        if (res !== 'ok' && res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        n++;
      }
      t = performance.now();
    }
    return ((t - start) * 1000) / n;
  };
  for (const [framework, build] of Object.entries(FRAMEWORKS)) {
    const runners = [];
    for (const [name, make] of Object.entries(HTTP_OBSERVERS)) {
      const send = await build(make());
      runners.push({ name, run: (ms) => requestLoop(send, ms), samples: [] });
    }
    await interleave(runners, 500);
    report(`over HTTP, ${framework} (in process), ${rounds} rounds of ${sliceMs} ms: µs per request`, added(runners));
  }
}
