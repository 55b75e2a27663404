#!/usr/bin/env node
// The seeds/001 burst experiment over real HTTP: see README.md. `pnpm experiment burst [--quick|--long]
// [--algorithms a,b] [--stores memory,redis] [--no-baseline]`.
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import os from 'node:os';
import { pinned, startChild, startRedis, runWorker, table, sleep, BENCH_DIR } from '../lib/common.mjs';
import { ALGORITHMS, STORES, SEED, configurations } from './configs.mjs';
import { summarize } from './stats.mjs';
import { writeChart } from './chart.mjs';

const HERE = path.join(BENCH_DIR, 'experiment');
const USAGE = `usage: pnpm experiment burst [--quick | --long] [--algorithms ${Object.keys(ALGORITHMS).join(',')}] [--stores ${STORES.join(',')}] [--no-baseline]
  default: 50 requests/s for 10 s, then 600/s for 30 s; --quick: 2 s + 5 s; --long: the seed's 60 s + 300 s`;

function parseArgs(argv) {
  const args = {
    phases: [
      { rate: 50, seconds: 10 },
      { rate: 600, seconds: 30 },
    ],
    mode: 'default',
    algorithms: Object.keys(ALGORITHMS),
    stores: STORES,
    baseline: true,
  };
  const list = (flag, value, allowed) => {
    const items = (value ?? '').split(',').filter(Boolean);
    const bad = items.filter((x) => !allowed.includes(x));
    if (items.length === 0 || bad.length)
      throw new Error(
        `${flag}: expected a comma-separated list of ${allowed.join(', ')}; got ${JSON.stringify(value ?? '')}`,
      );
    return items;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === 'burst')
      continue; // the experiment's name, as in `pnpm experiment burst`
    else if (a === '--quick')
      Object.assign(args, {
        mode: 'quick',
        phases: [
          { rate: 50, seconds: 2 },
          { rate: 600, seconds: 5 },
        ],
      });
    else if (a === '--long')
      Object.assign(args, {
        mode: 'long',
        phases: [
          { rate: 50, seconds: 60 },
          { rate: 600, seconds: 300 },
        ],
      });
    else if (a === '--algorithms') args.algorithms = list(a, argv[++i], Object.keys(ALGORITHMS));
    else if (a === '--stores') args.stores = list(a, argv[++i], STORES);
    else if (a === '--no-baseline') args.baseline = false;
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${JSON.stringify(a)}\n${USAGE}`);
  }
  return args;
}

const getJson = async (port, p) => (await fetch(`http://127.0.0.1:${port}${p}`)).json();

async function runOne(config, { backendPort, redisPort, phases }) {
  const env = {
    GATEWAY_CONFIG: JSON.stringify(config),
    BACKEND_PORT: String(backendPort),
    REDIS_PORT: String(redisPort ?? ''),
  };
  // Gateway (and Redis) on core 0; the load generator and the backend on core 1.
  const [cmd, argv] = pinned(0, process.execPath, [path.join(HERE, 'gateway.mjs')]);
  const gw = await startChild(cmd, argv, { env });
  const port = Number(gw.info);
  try {
    // A few requests to warm the gateway's code paths, then long enough for any limit to recover.
    for (let i = 0; i < 20; i++) await fetch(`http://127.0.0.1:${port}/`).then((r) => r.arrayBuffer());
    await sleep(2500);
    await fetch(`http://127.0.0.1:${backendPort}/__reset`).then((r) => r.text());
    const startAt = performance.timeOrigin + performance.now() + 300;
    const lengthMs = phases.reduce((s, p) => s + p.seconds * 1000, 0);
    const load = await runWorker(path.join(HERE, 'loadgen.mjs'), [], {
      cpu: 1,
      env: { LOAD_CONFIG: JSON.stringify({ port, phases, startAt }) },
      timeoutMs: lengthMs + 60_000,
    });
    const backend = await getJson(backendPort, '/__stats');
    backend.arrivals = backend.arrivals.map((t) => t - startAt);
    return summarize({ load, backend, surgeAtMs: phases[0].seconds * 1000, lengthMs });
  } finally {
    const exited = new Promise((r) => gw.child.once('exit', r));
    gw.child.kill('SIGTERM');
    await Promise.race([exited, sleep(2000)]);
  }
}

function printTable(runs, args) {
  const ms = (x) => (x === null || x === undefined ? '-' : x.toFixed(1));
  const n = (x) => String(x);
  const rows = runs.map(({ label, result: r }) => [
    label,
    n(r.sent),
    n(r.admitted),
    n(r.denied),
    n(r.errors),
    ms(r.admittedLatencyMs.p50),
    ms(r.admittedLatencyMs.p95),
    ms(r.admittedLatencyMs.p99),
    ms(r.admittedLatencyMs.max),
    ms(r.deniedLatencyMs.mean),
    ms(r.deniedLatencyMs.max),
    n(r.backend.maxArrivalsIn10ms),
    n(r.backend.peakConcurrency),
  ]);
  for (const [a, s] of Object.entries(SEED)) {
    rows.push([
      `seed: ${a} wait 500ms (SCG, Redis, 60 s + 300 s)`,
      '~' + s.sent,
      '~' + s.admitted,
      '~' + s.denied,
      '-',
      ...[s.p50, s.p95, s.p99, s.max, s.deniedMean].map(n),
      '-',
      '-',
      '-',
    ]);
  }
  const headers = [
    'configuration',
    'sent',
    'admitted',
    '429',
    'errors',
    'P50 ms',
    'P95 ms',
    'P99 ms',
    'max ms',
    '429 mean ms',
    '429 max ms',
    'backend max/10ms',
    'backend peak conc.',
  ];
  const t = table(headers, rows);
  console.log(
    `\nBurst experiment (${args.mode}: ${args.phases.map((p) => `${p.rate}/s for ${p.seconds} s`).join(', then ')}); latency from each request's scheduled send time\n`,
  );
  console.log(t);
  return t;
}

const args = parseArgs(process.argv.slice(2));
const configs = configurations(args).filter((c) => args.baseline || c.kind !== 'baseline');
const [bcmd, bargv] = pinned(1, process.execPath, [path.join(HERE, 'backend.mjs')]);
const backend = await startChild(bcmd, bargv);
const backendPort = Number(backend.info);
const redis = args.stores.includes('redis') ? await startRedis({ cpu: 0 }) : undefined;
const runs = [];
const failures = [];
const started = new Date();
try {
  for (const config of configs) {
    process.stderr.write(`running ${config.label} ...\n`);
    let result;
    try {
      result = await runOne(config, { backendPort, redisPort: redis?.port, phases: args.phases });
    } catch (error) {
      // One configuration that fails (a gateway that does not start) is reported, not the whole matrix lost.
      process.stderr.write(`  FAILED: ${error.message}\n`);
      failures.push({ id: config.id, label: config.label, error: error.message });
      continue;
    }
    runs.push({
      id: config.id,
      label: config.label,
      algorithm: config.algorithm ?? null,
      store: config.store,
      waits: config.waits ?? false,
      limit: config.limit ?? null,
      wait: config.wait ?? null,
      result,
    });
    process.stderr.write(
      `  admitted ${result.admitted}, 429 ${result.denied}, errors ${result.errors}, P99 ${result.admittedLatencyMs.p99} ms\n`,
    );
  }
} finally {
  backend.child.kill('SIGTERM');
  await redis?.stop();
}
const text = printTable(runs, args);
const load = os
  .loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
const meta = {
  started: started.toISOString(),
  mode: args.mode,
  phases: args.phases,
  node: process.version,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  loadavgAfter: load,
};
const stamp = started.toISOString().replace(/[:.]/g, '-');
await mkdir(path.join(HERE, 'results'), { recursive: true });
const base = path.join(HERE, 'results', `burst-${args.mode}-${stamp}`);
await writeFile(`${base}.json`, JSON.stringify({ meta, seed: SEED, runs, failures }, null, 1) + '\n');
await writeFile(`${base}.md`, text + '\n');
await writeChart({ meta, runs }, [`${base}.svg`, `${base}.png`]);
console.log(`\n${os.cpus().length} cores (${meta.cpuModel}), load average after the run: ${load}`);
console.log(`written: ${base}.{json,md,svg,png}`);
if (failures.length) {
  console.log(`failed: ${failures.map((f) => f.label).join('; ')}`);
  process.exitCode = 1;
}
