// Valkey GLIDE against ioredis through the store, in ONE process on one Redis: section 3's
// `rl token-bucket` row (64 decisions in flight, 100k keys, `timeout: false`, every other option the
// default), the two stores run in turn for short slices, the order alternating by round. Each round's
// GLIDE decisions/s is divided by the ioredis store's of the same round, so that a machine whose load
// changes from second to second still gives a ratio (bench/README.md, "Valkey GLIDE"). Not a test.
//
//   nice -n 10 node bench/glide-ab.mjs [rounds=20] [sliceMs=400] [inflight=64]
//
// Both clients are the ones @rl/store-redis is tested with (its devDependencies: @valkey/valkey-glide 2,
// ioredis 6). Redis is started here. Prints, per store, the median and 10th–90th percentiles of
// decisions/s, of the client process's CPU µs per decision (GLIDE's native threads included), and of the
// ratio to ioredis in the same round.
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { ROOT_DIR, ipKey, startRedis } from './lib/common.mjs';

const [roundsArg = '20', sliceArg = '400', inflightArg = '64'] = process.argv.slice(2);
const [ROUNDS, SLICE_MS, INFLIGHT] = [roundsArg, sliceArg, inflightArg].map(Number);
const KEYS = 100_000;

const url = (rel) => pathToFileURL(path.join(ROOT_DIR, rel)).href;
const core = await import(url('packages/core/dist/index.js'));
const { RedisStore } = await import(url('packages/store-redis/dist/index.js'));
const require = createRequire(path.join(ROOT_DIR, 'packages/store-redis/package.json'));
const redis = await startRedis();

/** A limiter on a new client of `family`, connected. */
async function contender(family) {
  let client;
  let close;
  if (family === 'GLIDE') {
    const { GlideClient, Logger } = require('@valkey/valkey-glide');
    // The first decision's NOSCRIPT (the script not yet cached) is logged as a warning otherwise.
    Logger.setLoggerConfig('error');
    client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: redis.port }] });
    close = () => client.close();
  } else {
    const Redis = require('ioredis').default ?? require('ioredis');
    client = new Redis({ host: '127.0.0.1', port: redis.port });
    await client.ping();
    close = () => client.disconnect();
  }
  const store = new RedisStore({ client });
  const limiter = core.createLimiter({
    algorithm: core.tokenBucket({ capacity: 100, refillRate: 100, interval: 86_400_000 }),
    store,
    timeout: false,
    prefix: family,
  });
  return {
    name: family,
    limiter,
    close: async () => {
      await store.close();
      close();
    },
  };
}

let next = 0;
/** Decisions/s and client CPU µs per decision of `c` over `ms`, `INFLIGHT` in flight. */
async function slice(c, ms) {
  const stop = performance.now() + ms;
  let decisions = 0;
  const lane = async () => {
    while (performance.now() < stop) {
      await c.limiter.consume(ipKey(next++ % KEYS));
      decisions++;
    }
  };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: INFLIGHT }, lane));
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: (decisions / (performance.now() - t0)) * 1000, cpuUs: (cpu.user + cpu.system) / decisions };
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const spread = (values, digits) =>
  `${quantile(values, 0.5).toFixed(digits)} (${quantile(values, 0.1).toFixed(digits)}–${quantile(values, 0.9).toFixed(digits)})`;

const contenders = [];
try {
  contenders.push(await contender('GLIDE'), await contender('ioredis'));
  // Every contender's 100k keys written once, and its code warm.
  for (const c of contenders) await slice(c, 2000);
  const runs = new Map(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    const got = new Map();
    for (const c of order) got.set(c.name, await slice(c, SLICE_MS));
    for (const [name, run] of got) runs.get(name).push({ ...run, ratio: run.perSecond / got.get('ioredis').perSecond });
  }
  console.log(`${ROUNDS} rounds of ${SLICE_MS} ms, ${INFLIGHT} in flight: median (10th–90th percentile)`);
  console.log('| store | decisions/s | client CPU µs per decision | / ioredis, same round |');
  console.log('| --- | --- | --- | --- |');
  for (const [name, list] of runs) {
    const rate = spread(
      list.map((r) => r.perSecond / 1000),
      1,
    );
    const cpu = spread(
      list.map((r) => r.cpuUs),
      2,
    );
    const ratio = spread(
      list.map((r) => r.ratio),
      2,
    );
    console.log(`| ${name} | ${rate}k | ${cpu} | ${ratio} |`);
  }
} finally {
  for (const c of contenders) await c.close();
  await redis.stop();
}
