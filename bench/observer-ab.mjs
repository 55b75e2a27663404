// What an observer adds per decision, in one process: the same JIT, heap and moment for every
// contender, interleaved rounds (alternate order), so the machine's drift is out of the differences.
// In process: a memory-store token bucket (100k keys, everything admitted) without an observer, with a
// no-op observer (an empty `decision`), a counting observer (a Map by limit/outcome), an observer with
// only `storeError` (hears no decision), @rl/prometheus's and @rl/opentelemetry's observers (with and
// without store durations), by `await limiter.consume` and `limiter.consumeSync`.
// In process, every figure is this process's CPU time per decision; an observer's cost is the median
// over rounds of its difference to the row without one in the same round.
// Over HTTP (in process, see `http` below): Express, Fastify, Koa and Hono with @rl's middleware on the
// memory store, without an observer, with a no-op one and with @rl/prometheus's; µs per request added.
// Usage (after a build): nice -n 10 node bench/observer-ab.mjs [rounds=9] [sliceMs=150] [http=1]
import { createRequire } from 'node:module';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter, fixedWindow, tokenBucket } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { ipKey, median, table } from './lib/common.mjs';
import { openTelemetryObserver, otelSdk, prometheusObserver, promClient } from './lib/exporters.mjs';
import { BIG, countingObserver } from './lib/memory-contenders.mjs';

const rounds = Number(process.argv[2] ?? 9);
const sliceMs = Number(process.argv[3] ?? 150);
const withHttp = (process.argv[4] ?? '1') !== '0';
const keys = Array.from({ length: 100_000 }, (_, i) => ipKey(i));

const { MeterProvider, InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } = otelSdk;

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
  ...(takesStoreDurations(openTelemetry) ? { 'opentelemetry, storeDurations: false': () => openTelemetry(false) } : {}),
};

function limiterWith(observer) {
  const store = new MemoryStore({ maxKeys: 2_000_000, sweepInterval: false });
  return createLimiter({ algorithm: tokenBucket({ capacity: BIG, refillRate: BIG }), store, observer });
}

const AsyncFunction = (async () => {}).constructor;
/**
 * A loop of its own per contender (its own type feedback): the process's CPU µs per decision over
 * `ms` of wall time (CPU time, not wall time: on a loaded machine the wall clock also counts the time
 * other processes had the core).
 */
function loopOf(awaited) {
  return new AsyncFunction(
    'call',
    'keys',
    'ms',
    `let ops = 0, i = 0;
    const n = keys.length, start = performance.now(), cpu = process.cpuUsage();
    while (performance.now() < start + ms) {
      for (let j = 0; j < 1024; j++) {
        const d = ${awaited ? 'await ' : ''}call(keys[i]);
        if (d.allowed !== true) throw new Error('denied');
        if (++i === n) i = 0;
      }
      ops += 1024;
    }
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / ops;`,
  );
}

// A full collection before each slice (not counted): a slice then pays for its own garbage, not for the
// garbage the contender before it left.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc');

/** Runs `runners` (each `{ run(ms) → µs per op, samples }`) in `n` interleaved rounds of `ms` each, the order alternating. */
async function interleave(runners, warmMs, n = rounds, ms = sliceMs) {
  for (const r of runners) await r.run(warmMs);
  for (let round = 0; round < n; round++) {
    for (const r of round % 2 ? [...runners].reverse() : runners) {
      collectGarbage();
      r.samples.push(await r.run(ms));
    }
  }
}

/** Per runner: median µs, and the median and quartiles of its per-round difference over runner 0. */
function added(runners) {
  const base = runners[0].samples;
  return runners.map((r) => {
    const diffs = r.samples.map((x, i) => x - base[i]).sort((a, b) => a - b);
    const quartile = (q) => diffs[Math.min(diffs.length - 1, Math.floor(q * diffs.length))];
    return {
      name: r.name,
      us: median(r.samples),
      added: median(diffs),
      range: `${quartile(0.25).toFixed(2)} … ${quartile(0.75).toFixed(2)}`,
      ratio: median(r.samples) / median(base),
    };
  });
}

const report = (title, rows) => {
  console.log(`\n${title}`);
  console.log(
    table(
      ['observer', 'µs', 'µs added (median)', 'added, quartiles of rounds', '× none'],
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
    `in process, ${verb}, memory store, 100k keys, ${rounds} rounds of ${sliceMs} ms: CPU µs per decision`,
    added(runners),
  );
}

if (withHttp) await http();
process.exit(0);

/**
 * The HTTP rows, in process: each framework's own request handling (routing, its middleware chain,
 * rl's adapter, the response) without a socket: Fastify's `inject`, light-my-request (Fastify's
 * injector) for Express's and Koa's Node handlers, `app.request` for Hono. Four apps per framework,
 * rl's middleware on the memory store without an observer, with a no-op one, with @rl/prometheus's,
 * with and without store durations. Requests alternate between the apps one by one (the order
 * shuffled per cycle) and each is timed alone: per app the median of its request times, per round
 * the medians' differences to the app without an observer. Loopback with the server's CPU read per
 * slice (bench/http-ab.mjs) could not resolve a microsecond on this machine: quartiles of ±6–12 µs.
 */
async function http() {
  const inject = createRequire(createRequire(import.meta.url).resolve('fastify'))('light-my-request');
  const observers = {
    none: () => undefined,
    'no-op': () => ({ decision() {} }),
    prometheus: () => prometheus(),
    'prometheus, storeDurations: false': () => prometheus(false),
  };
  const options = (observer) => ({ algorithm: fixedWindow({ limit: BIG, window: '1m' }), observer });
  const FRAMEWORKS = {
    async express(observer) {
      const express = (await import('express')).default;
      const { rateLimit } = await import('@rl/express');
      const app = express();
      app.use(rateLimit(options(observer)));
      app.get('/', (req, res) => res.send('ok'));
      return (remoteAddress) => inject(app, { method: 'GET', url: '/', remoteAddress });
    },
    async fastify(observer) {
      const Fastify = (await import('fastify')).default;
      const { rateLimit } = await import('@rl/fastify');
      const app = Fastify({ logger: false });
      await app.register(rateLimit, options(observer));
      app.get('/', async () => 'ok');
      await app.ready();
      return (remoteAddress) => app.inject({ method: 'GET', url: '/', remoteAddress });
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
      return (remoteAddress) => inject(handler, { method: 'GET', url: '/', remoteAddress });
    },
    async hono(observer) {
      const { Hono } = await import('hono');
      const { rateLimit } = await import('@rl/hono');
      const app = new Hono();
      // The Fetch entry has no socket to read an address from: the key is a header's.
      app.use(rateLimit({ ...options(observer), key: (c) => c.req.header('x-client') ?? 'anonymous' }));
      app.get('/', (c) => c.text('ok'));
      return (client) => app.request('http://bench.local/', { headers: { 'x-client': client } });
    },
  };
  const perRound = 2000;
  for (const [framework, build] of Object.entries(FRAMEWORKS)) {
    const names = Object.keys(observers);
    const apps = [];
    for (const make of Object.values(observers)) apps.push(await build(make()));
    const added = names.map(() => []);
    const medians = names.map(() => []);
    let n = 0;
    for (let round = -1; round < rounds; round++) {
      collectGarbage();
      const times = names.map(() => []);
      for (let cycle = 0; cycle < perRound; cycle++) {
        const order = names.map((_, i) => i).sort(() => Math.random() - 0.5);
        for (const i of order) {
          const start = performance.now();
          const res = await apps[i](keys[n++ & 1023]);
          const elapsed = performance.now() - start;
          if ((res.statusCode ?? res.status) !== 200) throw new Error(`${framework}: status ${res.statusCode}`);
          times[i].push(elapsed * 1000);
        }
      }
      // Round -1 warms up.
      if (round < 0) continue;
      const m = times.map((t) => median(t));
      m.forEach((x, i) => {
        medians[i].push(x);
        added[i].push(x - m[0]);
      });
    }
    console.log(
      `\nover HTTP, ${framework} (in process, requests alternating one by one), ${rounds} rounds of ${perRound} requests per app: µs per request`,
    );
    console.log(
      table(
        ['observer', 'µs (median)', 'µs added (median of rounds)', 'added, min … max of rounds'],
        names.map((name, i) => {
          const sorted = [...added[i]].sort((a, b) => a - b);
          return [
            name,
            median(medians[i]).toFixed(2),
            median(added[i]).toFixed(2),
            `${sorted[0].toFixed(2)} … ${sorted.at(-1).toFixed(2)}`,
          ];
        }),
      ),
    );
  }
}
