// `pnpm bench` in @rl/store-memory: decisions per second for each algorithm through
// `await limiter.consume(key)` (one hot key; 100k keys) and heap bytes per key at 1M keys.
// Shares the workers of the repository suite (bench/); run `pnpm build` at the root first.
// The full comparison with the peers is `pnpm bench` at the root.
// Options: --quick (shorter runs, 200k keys for the heap).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const benchDir = path.resolve(here, '../../../bench');
const { runWorker, median, table } = await import(path.join(benchDir, 'lib/common.mjs'));
const { RL_ALGORITHMS } = await import(path.join(benchDir, 'lib/memory-contenders.mjs'));

const quick = process.argv.includes('--quick');
const rounds = quick ? 1 : 3;
const algorithms = Object.keys(RL_ALGORITHMS);
const consumeWorker = path.join(benchDir, 'sections/consume-worker.mjs');
const heapWorker = path.join(benchDir, 'sections/heap-worker.mjs');

const ops = {};
for (let r = 0; r < rounds; r++) {
  for (const keys of [1, 100_000]) {
    for (const a of r % 2 ? [...algorithms].reverse() : algorithms) {
      const res = await runWorker(
        consumeWorker,
        [`rl ${a}`, String(keys), quick ? '150' : '300', quick ? '300' : '700'],
        { cpu: 0 },
      );
      (ops[`${a}|${keys}`] ??= []).push(res.opsPerSec);
    }
  }
}
const n = quick ? 200_000 : 1_000_000;
const heap = {};
for (const name of ['Set of key strings (floor)', ...algorithms.map((a) => `rl ${a}`)]) {
  heap[name] = (await runWorker(heapWorker, [name, String(n)], { nodeArgs: ['--expose-gc'], cpu: 0 })).bytesPerKey;
}
const floor = heap['Set of key strings (floor)'];
const rows = algorithms.map((a) => [
  a,
  median(ops[`${a}|1`]),
  median(ops[`${a}|100000`]),
  heap[`rl ${a}`],
  heap[`rl ${a}`] - floor,
]);
rows.push(['(Set of the key strings)', '-', '-', floor, 0]);
console.log(
  `@rl/store-memory: await limiter.consume(key), median of ${rounds} round(s); heap at ${n.toLocaleString('en')} IPv4-like keys\n`,
);
console.log(table(['algorithm', 'ops/s 1 key', 'ops/s 100k keys', `heap B/key`, 'above Set'], rows));
console.log(
  '\nThe sliding window log admits 1000/s per key here (a huge limit would grow its log without bound); the others admit everything.',
);
