// Where the heap bytes of a Redis contender's decisions go (section 3's contenders, bench/lib/redis-contenders.mjs):
// V8's sampling heap profiler (collected objects included) over `measured` decisions at 64 in flight
// after `warm` ones, bytes per decision by allocating frame (what the compiler inlined is counted in the
// function it was inlined into). A sample, not a count. Starts its own Redis. Usage (after a build):
// node bench/redis-alloc-profile.mjs '<contender>' [warm=20000] [measured=40000] [packages|all]
import inspector from 'node:inspector';
import Redis from 'ioredis';
import { startRedis } from './lib/common.mjs';
import { REDIS_CONTENDERS } from './lib/redis-contenders.mjs';
import { bytesByFrame } from './lib/heap-profile.mjs';

const [name, warm = '20000', measured = '40000', which = 'all'] = process.argv.slice(2);
if (REDIS_CONTENDERS[name] === undefined) {
  console.error(
    `usage: node bench/redis-alloc-profile.mjs '<${Object.keys(REDIS_CONTENDERS).join('|')}>' [warm] [measured] [packages|all]`,
  );
  process.exit(2);
}
const INTERVAL = 64;
const INFLIGHT = 64;
const redis = await startRedis({});
const client = new Redis({ host: '127.0.0.1', port: redis.port });
const session = new inspector.Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
let profile;
try {
  const { call } = await REDIS_CONTENDERS[name](client);
  /** `count` decisions over 100k keys, `INFLIGHT` at a time. */
  const run = async (count) => {
    let next = 0;
    const lane = async () => {
      while (next < count) await call(`k${next++ % 100_000}`);
    };
    await Promise.all(Array.from({ length: INFLIGHT }, lane));
  };
  await run(Number(warm));
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', {
    samplingInterval: INTERVAL,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await run(Number(measured));
  ({ profile } = await post('HeapProfiler.stopSampling'));
} finally {
  client.disconnect();
  await redis.stop();
}
const rows = bytesByFrame(profile, { interval: INTERVAL, operations: Number(measured), which });
const total = rows.reduce((sum, row) => sum + row[1], 0);
console.log(
  `${name}: ${measured} decisions profiled after ${warm}; ${Math.round(total)} bytes per decision; by allocating frame:`,
);
for (const [frame, bytes, parts] of rows.slice(0, 30))
  console.log(`${String(Math.round(bytes)).padStart(6)}  ${frame}  (${parts})`);
