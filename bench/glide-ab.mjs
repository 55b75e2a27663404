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
import { ROOT_DIR, startRedis } from './lib/common.mjs';
import { runInterleaved } from './lib/interleaved.mjs';

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

const contenders = [];
try {
  contenders.push(await contender('GLIDE'), await contender('ioredis'));
  await runInterleaved(contenders, {
    rounds: ROUNDS,
    sliceMs: SLICE_MS,
    inflight: INFLIGHT,
    keys: KEYS,
    reference: 'ioredis',
  });
} finally {
  for (const c of contenders) await c.close();
  await redis.stop();
}
