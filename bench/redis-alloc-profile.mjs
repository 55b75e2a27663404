// Where the heap bytes of a Redis contender's decisions go (section 3's contenders, bench/lib/redis-contenders.mjs):
// V8's sampling heap profiler (collected objects included) over `measured` decisions at 64 in flight
// after `warm` ones, bytes per decision by allocating frame (what the compiler inlined is counted in the
// function it was inlined into). A sample, not a count. Starts its own Redis. Usage (after a build):
// node bench/redis-alloc-profile.mjs '<contender>' [warm=20000] [measured=40000] [packages|all]
import inspector from 'node:inspector';
import Redis from 'ioredis';
import { startRedis } from './lib/common.mjs';
import { REDIS_CONTENDERS } from './lib/redis-contenders.mjs';

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
const nameOf = new Map();
const walk = (node) => {
  const f = node.callFrame;
  nameOf.set(
    node.id,
    `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(packages|node_modules)\//, '$1/')}:${f.lineNumber + 1}`,
  );
  node.children.forEach(walk);
};
walk(profile.head);
const frames = new Map();
for (const sample of profile.samples) {
  const frame = nameOf.get(sample.nodeId);
  if (which !== 'all' && !frame.includes('packages/')) continue;
  const sizes = frames.get(frame) ?? new Map();
  frames.set(frame, sizes);
  sizes.set(sample.size, (sizes.get(sample.size) ?? 0) + 1);
}
// A sample of `size` bytes stands for 1 / (1 - e^(-size / interval)) objects of that size (V8's scaling).
let total = 0;
const rows = [...frames].map(([frame, sizes]) => {
  let bytes = 0;
  const parts = [];
  for (const [size, count] of [...sizes].sort((a, b) => b[0] - a[0])) {
    const objects = count / (1 - Math.exp(-size / INTERVAL)) / Number(measured);
    bytes += size * objects;
    if (objects >= 0.05) parts.push(`${size} B × ${objects.toFixed(2)}`);
  }
  total += bytes;
  return [frame, bytes, parts.join(', ')];
});
rows.sort((a, b) => b[1] - a[1]);
console.log(
  `${name}: ${measured} decisions profiled after ${warm}; ${Math.round(total)} bytes per decision; by allocating frame:`,
);
for (const [frame, bytes, parts] of rows.slice(0, 30))
  console.log(`${String(Math.round(bytes)).padStart(6)}  ${frame}  (${parts})`);
