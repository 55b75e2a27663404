// Counts of one decision on the memory store (issue 39): bytes allocated per decision, or a fixed number
// of decisions for an instruction count (cachegrind). One tree, one algorithm, one verb per process.
// Bytes (the heap's growth over 100,000 decisions, five times, median; the young generation large
// enough that no scavenge runs in between, the compiler's choices made without timing):
//   node --no-concurrent-recompilation --max-semi-space-size=512 --min-semi-space-size=512 \
//     bench/decision-counts.mjs <tree> <algorithm> <sync|await|hand> [keys=1] [prefix=-]
// Instructions (the difference of two runs, `ops` 0 and 500000, over 500,000):
//   valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null node --single-threaded-gc \
//     --no-concurrent-recompilation bench/decision-counts.mjs <tree> <algorithm> <verb> <keys> <prefix> <ops>
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { handBucket } from './lib/memory-contenders.mjs';
import { ipKey, median } from './lib/common.mjs';

const [tree, algorithm, verb, keysArg = '1', prefix = '-', opsArg] = process.argv.slice(2);
if (verb === undefined) {
  console.error('usage: node bench/decision-counts.mjs <tree> <algorithm> <sync|await|hand> [keys] [prefix|-] [ops]');
  process.exit(2);
}
const nKeys = Number(keysArg);
const BIG = 1_000_000_000;
const core = await import(pathToFileURL(path.join(path.resolve(tree), 'packages/core/dist/index.js')).href);
const memory = pathToFileURL(path.join(path.resolve(tree), 'packages/store-memory/dist/index.js')).href;
const { MemoryStore } = await import(memory);
const algorithms = {
  'fixed-window': () => core.fixedWindow({ limit: BIG, window: '1m' }),
  'sliding-window-counter': () => core.slidingWindowCounter({ limit: BIG, window: '1m' }),
  'sliding-window-log': () => core.slidingWindowLog({ limit: 1000, window: '1s' }),
  'token-bucket': () => core.tokenBucket({ capacity: BIG, refillRate: BIG }),
  'leaky-bucket': () => core.leakyBucket({ capacity: BIG, leakRate: BIG }),
};
const limiter = core.createLimiter({
  algorithm: algorithms[algorithm](),
  store: new MemoryStore({ maxKeys: 2_000_000, sweepInterval: false }),
  ...(prefix === '-' ? {} : { prefix }),
});
const take = handBucket();
const keys = Array.from({ length: nKeys }, (_, i) => ipKey(i));
let i = 0;
let admitted = 0;
const runSync = (n) => {
  for (let j = 0; j < n; j++) {
    if ((verb === 'hand' ? take(keys[i]) : limiter.consumeSync(keys[i]).allowed) === true) admitted++;
    if (++i === nKeys) i = 0;
  }
};
const runAwait = async (n) => {
  for (let j = 0; j < n; j++) {
    if ((await limiter.consume(keys[i])).allowed) admitted++;
    if (++i === nKeys) i = 0;
  }
};
const run = verb === 'await' ? runAwait : runSync;
await run(Math.max(400_000, 3 * nKeys));
if (opsArg !== undefined) {
  await run(Number(opsArg));
  console.log(`${admitted} admitted`);
} else {
  const bytes = [];
  for (let r = 0; r < 5; r++) {
    const before = v8.getHeapStatistics().used_heap_size;
    await run(100_000);
    bytes.push((v8.getHeapStatistics().used_heap_size - before) / 100_000);
  }
  console.log(`${algorithm} ${verb}, ${nKeys} keys, prefix ${prefix}: ${median(bytes).toFixed(0)} bytes per decision`);
}
