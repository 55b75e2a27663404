// node-redis against ioredis through the store, and another build's store on node-redis, in ONE process
// on one Redis: section 3's `rl token-bucket` rows (64 decisions in flight, 100k keys, `timeout: false`,
// every other option the default), run in turn for short slices, the order alternating by round. Each
// round's decisions/s of a node-redis store is divided by the ioredis store's of the same round, so
// that a machine whose load changes from second to second still gives a ratio (bench/README.md,
// "node-redis: where its time goes"). Not a test.
//
//   taskset -c 1 node bench/node-redis-ab.mjs <other built checkout> [rounds=40] [sliceMs=400] [inflight=64]
//
// `<other built checkout>`: for example `git worktree add /tmp/rl-before <commit>`, then install and
// build it. Redis is started here (on core 0 when `taskset` is present). Prints, per store, the median
// and 10th–90th percentiles of decisions/s, of the client's CPU µs per decision, and of the ratio to
// ioredis in the same round.
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { ROOT_DIR, ipKey, startRedis } from './lib/common.mjs';

const [otherRoot, roundsArg = '40', sliceArg = '400', inflightArg = '64'] = process.argv.slice(2);
if (otherRoot === undefined) {
  console.error('usage: node bench/node-redis-ab.mjs <other built checkout> [rounds] [sliceMs] [inflight]');
  process.exit(2);
}
const [ROUNDS, SLICE_MS, INFLIGHT] = [roundsArg, sliceArg, inflightArg].map(Number);
const KEYS = 100_000;

const redis = await startRedis({ cpu: 0 });

/** A limiter of `root`'s build on a new client of `family` (each build's own `redis` or `ioredis` package). */
async function contender(name, root, family) {
  const url = (rel) => pathToFileURL(path.join(root, rel)).href;
  const core = await import(url('packages/core/dist/index.js'));
  const { RedisStore } = await import(url('packages/store-redis/dist/index.js'));
  const require = createRequire(path.join(root, 'packages/store-redis/package.json'));
  let client;
  let close;
  if (family === 'node-redis') {
    client = require('redis').createClient({ socket: { host: '127.0.0.1', port: redis.port } });
    await client.connect();
    close = () => client.close();
  } else {
    const Redis = require('ioredis').default ?? require('ioredis');
    client = new Redis({ host: '127.0.0.1', port: redis.port });
    close = () => client.disconnect();
  }
  const limiter = core.createLimiter({
    algorithm: core.tokenBucket({ capacity: 100, refillRate: 100, interval: 86_400_000 }),
    store: new RedisStore({ client }),
    timeout: false,
    prefix: name,
  });
  return { name, limiter, close };
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
  contenders.push(
    await contender('before node-redis', path.resolve(otherRoot), 'node-redis'),
    await contender('after node-redis', ROOT_DIR, 'node-redis'),
    await contender('after ioredis', ROOT_DIR, 'ioredis'),
  );
  // Every contender's 100k keys written once, and its code warm.
  for (const c of contenders) await slice(c, 2000);
  const runs = new Map(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    const got = new Map();
    for (const c of order) got.set(c.name, await slice(c, SLICE_MS));
    for (const [name, run] of got)
      runs.get(name).push({ ...run, ratio: run.perSecond / got.get('after ioredis').perSecond });
  }
  console.log(`${ROUNDS} rounds of ${SLICE_MS} ms, ${INFLIGHT} in flight: median (10th–90th percentile)`);
  console.log('| store | decisions/s | client CPU µs per decision | / ioredis, same round |');
  console.log('| --- | --- | --- | --- |');
  for (const [name, list] of runs)
    console.log(
      `| ${name} | ${spread(
        list.map((r) => r.perSecond / 1000),
        1,
      )}k | ${spread(
        list.map((r) => r.cpuUs),
        2,
      )} | ${spread(
        list.map((r) => r.ratio),
        2,
      )} |`,
    );
} finally {
  for (const c of contenders) await c.close();
  await redis.stop();
}
