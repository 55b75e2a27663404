// An A/B of two builds of the memory store's decision in one process (issue 39): each tree's
// `consumeSync` and `await consume` for every rate algorithm, beside the hand bucket (sync and
// awaited), in alternating slices, so that the ratios share the process's JIT, heap and machine.
// Usage (after a build of both trees):
//   node bench/memory-ab.mjs <before tree> <after tree> [algorithm=token-bucket] [keys=100000] [prefix=-] [rounds=9] [sliceMs=150]
// One algorithm per process, as in section 1 (several would share the store's call of `step`, which
// then sees several targets). `prefix` `-`: limiters without a prefix (as section 1); any other: that
// prefix (the storage key is then `prefix:key`, a new string per call, as every limiter with a prefix has).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { handBucket } from './lib/memory-contenders.mjs';
import { ipKey, median } from './lib/common.mjs';

const [before, after] = process.argv.slice(2, 4).map((tree) => path.resolve(tree));
if (before === undefined || after === undefined) {
  console.error(
    'usage: node bench/memory-ab.mjs <before tree> <after tree> [algorithm] [keys] [prefix|-] [rounds] [sliceMs]',
  );
  process.exit(2);
}
const only = process.argv[4] ?? 'token-bucket';
const nKeys = Number(process.argv[5] ?? 100_000);
const prefix = process.argv[6] ?? '-';
const rounds = Number(process.argv[7] ?? 9);
const sliceMs = Number(process.argv[8] ?? 150);
const BIG = 1_000_000_000;
const keys = Array.from({ length: nKeys }, (_, i) => ipKey(i));

/** The tree's limiters, one per algorithm and verb (each its own store, as in section 1). */
async function limitersOf(tree) {
  const core = await import(pathToFileURL(path.join(tree, 'packages/core/dist/index.js')).href);
  const { MemoryStore } = await import(pathToFileURL(path.join(tree, 'packages/store-memory/dist/index.js')).href);
  const algorithms = {
    'fixed-window': () => core.fixedWindow({ limit: BIG, window: '1m' }),
    'sliding-window-counter': () => core.slidingWindowCounter({ limit: BIG, window: '1m' }),
    'sliding-window-log': () => core.slidingWindowLog({ limit: 1000, window: '1s' }),
    'token-bucket': () => core.tokenBucket({ capacity: BIG, refillRate: BIG }),
    'leaky-bucket': () => core.leakyBucket({ capacity: BIG, leakRate: BIG }),
  };
  const make = (algorithm) =>
    core.createLimiter({
      algorithm: algorithm(),
      store: new MemoryStore({ maxKeys: 2_000_000, sweepInterval: false }),
      ...(prefix === '-' ? {} : { prefix }),
    });
  if (!(only in algorithms)) throw new Error(`no algorithm ${only}: one of ${Object.keys(algorithms).join(', ')}`);
  return Object.entries(algorithms)
    .filter(([name]) => name === only)
    .flatMap(([name, algorithm]) => {
      const sync = make(algorithm);
      const awaited = make(algorithm);
      return [
        { name: `${name} consumeSync`, call: (key) => sync.consumeSync(key), sync: true },
        { name: `${name} await consume`, call: (key) => awaited.consume(key), sync: false },
      ];
    });
}

const [a, b] = [await limitersOf(before), await limitersOf(after)];
const contenders = [
  { name: 'hand bucket (sync)', call: handBucket(), sync: true, side: '' },
  { name: 'hand bucket (await)', call: handBucket(), sync: false, side: '' },
  ...a.map((c) => ({ ...c, side: 'before' })),
  ...b.map((c) => ({ ...c, side: 'after' })),
];
const AsyncFunction = (async () => {}).constructor;
const runners = contenders.map((c) => {
  // A loop of its own per contender (its own feedback), so that no call site is shared between them.
  const body = `let ops = 0, i = 0; const n = keys.length, start = performance.now(); let t = start;
    while (t < start + ms) { for (let j = 0; j < 2048; j++) { const d = ${c.sync ? '' : 'await '}call(keys[i]);
      if (d !== true && d !== false && typeof d.allowed !== 'boolean') throw new Error('no decision');
      if (++i === n) i = 0; } ops += 2048; t = performance.now(); } return (ops / (t - start)) * 1000;`;
  const loop = c.sync ? new Function('call', 'keys', 'ms', body) : new AsyncFunction('call', 'keys', 'ms', body);
  return { ...c, run: (ms) => loop(c.call, keys, ms), samples: [] };
});
for (const r of runners) await r.run(Math.max(300, nKeys / 300));
for (let round = 0; round < rounds; round++) {
  for (const r of round % 2 ? [...runners].reverse() : runners) r.samples.push(await r.run(sliceMs));
}
const hand = { true: median(runners[0].samples), false: median(runners[1].samples) };
console.log(
  `${only}, ${nKeys} keys, prefix ${prefix}, ${rounds} rounds of ${sliceMs} ms; ns per decision and ratio to the hand bucket of the same kind (sync or awaited): before ${before}, after ${after}`,
);
console.log(`  hand bucket: sync ${(1e9 / hand.true).toFixed(0)} ns, awaited ${(1e9 / hand.false).toFixed(0)} ns`);
for (const r of runners.slice(2).filter((x) => x.side === 'before')) {
  const other = runners.find((x) => x.side === 'after' && x.name === r.name);
  const [m, n] = [median(r.samples), median(other.samples)];
  const base = hand[r.sync];
  console.log(
    `  ${r.name.padEnd(38)} before ${(1e9 / m).toFixed(0).padStart(5)} ns ${(m / base).toFixed(2)}   after ${(1e9 / n).toFixed(0).padStart(5)} ns ${(n / base).toFixed(2)}`,
  );
}
process.exit(0);
