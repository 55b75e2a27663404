// How much of a Redis contender's per-request garbage reaches the old generation (V8's allocation-site
// pretenuring: bench/README.md, "The grouped path in the old generation"). Each run is a fresh Node
// process (a pretenuring decision lasts for the process): `warm` ms of requests one at a time (a cold
// start whose every call is slow, which is what makes V8 pretenure), then `run` ms at 64 in flight,
// reading the old space's growth every 2 ms. Prints per run the requests/s, the client's CPU µs per
// request, the old space's growth in bytes per request, and the time spent in young and full
// collections. Not a test (a time, and a per-process decision of V8's). Starts its own Redis.
//
//   node bench/old-generation.mjs [runs=4] [rows, ';'-separated] [warmMs=300] [runMs=1500]
//   rows: section 3's contenders (bench/lib/redis-contenders.mjs); default the three-limit rows.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { hasTaskset, startRedis } from './lib/common.mjs';

const [runsArg, rowsArg, warmArg, runArg] = process.argv.slice(2);

if (process.env.OLD_GENERATION_WORKER === '1') await worker();
else await main();

async function main() {
  const runs = Number(runsArg ?? 4);
  const rows =
    rowsArg && rowsArg !== '-'
      ? rowsArg.split(';')
      : ['rl 3 limits, one script per request', 'rl 3 limits, one call per limit'];
  const redis = await startRedis({ cpu: 0 });
  try {
    for (let r = 0; r < runs; r++) {
      for (const row of rows) {
        const args = [fileURLToPath(import.meta.url), String(runs), row, warmArg ?? '300', runArg ?? '1500'];
        const [cmd, argv] = hasTaskset()
          ? ['taskset', ['-c', '1', process.execPath, ...args]]
          : [process.execPath, args];
        const child = spawnSync(cmd, argv, {
          encoding: 'utf8',
          env: { ...process.env, OLD_GENERATION_WORKER: '1', OLD_GENERATION_PORT: String(redis.port) },
        });
        if (child.status !== 0) throw new Error(`${row}: ${child.stderr}`);
        console.log(`round ${r + 1}  ${child.stdout.trim()}`);
      }
    }
  } finally {
    await redis.stop();
  }
}

async function worker() {
  const v8 = await import('node:v8');
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  const { default: Redis } = await import('ioredis');
  const { REDIS_CONTENDERS } = await import('./lib/redis-contenders.mjs');
  const client = new Redis({ host: '127.0.0.1', port: Number(process.env.OLD_GENERATION_PORT) });
  const { call } = await REDIS_CONTENDERS[rowsArg](client);
  const gc = { young: 0, full: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) gc.young += e.duration;
      else gc.full += e.duration;
  }).observe({ entryTypes: ['gc'] });
  const oldSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
  let next = 0;
  const warmUntil = Date.now() + Number(warmArg);
  while (Date.now() < warmUntil) await call(`k${next++ % 100_000}`);
  let stop = false;
  const lane = async () => {
    while (!stop) await call(`k${next++ % 100_000}`);
  };
  const lanes = Array.from({ length: 64 }, lane);
  // The first 200 ms at 64 in flight unmeasured (the compiler's work), then the measured span.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const start = next;
  const cpu = process.cpuUsage();
  gc.young = gc.full = 0;
  let grown = 0;
  let last = oldSpace();
  const sampler = setInterval(() => {
    const now = oldSpace();
    if (now > last) grown += now - last;
    last = now;
  }, 2);
  await new Promise((resolve) => setTimeout(resolve, Number(runArg)));
  clearInterval(sampler);
  const requests = next - start;
  const used = process.cpuUsage(cpu);
  stop = true;
  await Promise.all(lanes);
  client.disconnect();
  console.log(
    `${rowsArg}: ${Math.round(requests / (Number(runArg) / 1000))} requests/s, ` +
      `client CPU ${((used.user + used.system) / requests).toFixed(1)} µs/request, ` +
      `old space +${Math.round(grown / requests)} B/request, young GC ${gc.young.toFixed(0)} ms, full GC ${gc.full.toFixed(0)} ms`,
  );
}
