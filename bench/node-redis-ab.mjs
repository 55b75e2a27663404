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
import { ROOT_DIR, startRedis } from './lib/common.mjs';
import { runInterleaved } from './lib/interleaved.mjs';

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

const contenders = [];
try {
  contenders.push(
    await contender('before node-redis', path.resolve(otherRoot), 'node-redis'),
    await contender('after node-redis', ROOT_DIR, 'node-redis'),
    await contender('after ioredis', ROOT_DIR, 'ioredis'),
  );
  await runInterleaved(contenders, {
    rounds: ROUNDS,
    sliceMs: SLICE_MS,
    inflight: INFLIGHT,
    keys: KEYS,
    reference: 'after ioredis',
  });
} finally {
  for (const c of contenders) await c.close();
  await redis.stop();
}
