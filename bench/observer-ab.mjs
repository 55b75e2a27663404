// What an observer adds per decision, in one process: the same JIT, heap and moment for every
// contender, interleaved rounds (alternate order), so the machine's drift is out of the differences.
// In process: a memory-store token bucket (100k keys, everything admitted) without an observer, with a
// no-op observer (an empty `decision`), a counting observer (a Map by limit/outcome), an observer with
// only `storeError` (hears no decision), @rl/prometheus's and @rl/opentelemetry's observers (with and
// without store durations), by `await limiter.consume` and `limiter.consumeSync`.
// Over HTTP (loopback, see `http` below): Express, Fastify, Koa and Hono with @rl's middleware on the
// memory store, without an observer, with a no-op one and with @rl/prometheus's; server CPU µs per
// request added.
// Every figure is CPU time per operation (in process: this process's); an observer's cost is the median
// over rounds of its difference to the row without one in the same round.
// Usage (after a build): nice -n 10 node bench/observer-ab.mjs [rounds=9] [sliceMs=150] [http=1] [httpSliceMs=500]
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter, tokenBucket } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { BENCH_DIR, ipKey, median, pinned, startChild, table } from './lib/common.mjs';
import { openTelemetryObserver, otelSdk, prometheusObserver, promClient } from './lib/exporters.mjs';
import { startLoad } from './lib/http-load-client.mjs';
import { BIG, countingObserver } from './lib/memory-contenders.mjs';

const rounds = Number(process.argv[2] ?? 9);
const sliceMs = Number(process.argv[3] ?? 150);
const withHttp = (process.argv[4] ?? '1') !== '0';
// The server's CPU is read from /proc in 10 ms ticks: a slice of 500 ms reads it to 2 %.
const httpSliceMs = Number(process.argv[5] ?? 500);
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
 * The HTTP rows: per framework one server process (sections/http-server.mjs, core 0) with four apps,
 * rl's middleware on the memory store without an observer, with a no-op one and with @rl/prometheus's
 * (with and without store durations);
 * the load client (autocannon, core 1, 64 connections over loopback) alternates slices between them.
 * The figure is the server's CPU per request (its /proc times), as section 4 and bench/http-ab.mjs.
 */
async function http() {
  const variants = ['rl-memory:allow', 'rl-noop-observed:allow', 'rl-prometheus:allow', 'rl-prometheus-counts:allow'];
  const names = ['none', 'no-op', 'prometheus', 'prometheus, storeDurations: false'];
  const load = startLoad(1);
  try {
    for (const framework of ['express', 'fastify', 'koa', 'hono']) {
      const [cmd, argv] = pinned(0, process.execPath, [
        path.join(BENCH_DIR, 'sections/http-server.mjs'),
        framework,
        variants.join(','),
        'allow',
      ]);
      const server = await startChild(cmd, argv);
      try {
        const ports = server.info.split(',').map(Number);
        const pid = server.child.pid;
        const measure = (port, seconds, warmRequests = 0) =>
          load.measure({ port, pid, connections: 64, warmRequests, seconds });
        const runners = ports.map((port, i) => ({
          name: names[i],
          run: async (ms) => (await measure(port, ms / 1000, ms === 0 ? 5000 : 0)).serverCpuUsPerReq,
          samples: [],
        }));
        await interleave(runners, 0, 2 * rounds, httpSliceMs);
        report(
          `over HTTP, ${framework}, loopback, ${2 * rounds} rounds of ${httpSliceMs} ms: server CPU µs per request`,
          added(runners),
        );
      } finally {
        server.child.kill('SIGTERM');
      }
    }
  } finally {
    await load.stop();
  }
}
