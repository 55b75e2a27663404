// An A/B of the promise path in one process: the same JIT and heap for every contender, alternating
// slices, so that the machine's drift between fresh processes (section 1) is out of the ratio.
// Usage (after a build): node bench/consume-ab.mjs [rounds=15] [sliceMs=200] [keys=100000]
import { CONTENDERS, handBucket } from './lib/memory-contenders.mjs';
import { ipKey, median } from './lib/common.mjs';

const [rounds, sliceMs, nKeys] = [
  Number(process.argv[2] ?? 15),
  Number(process.argv[3] ?? 200),
  Number(process.argv[4] ?? 100_000),
];
const keys = Array.from({ length: nKeys }, (_, i) => ipKey(i));

/** A result of a decision's size (eight fields), as a class: one shape for every call. */
class Result {
  constructor(allowed) {
    this.allowed = allowed;
    this.limit = 1e9;
    this.remaining = 0;
    this.resetMs = 0;
    this.retryAfterMs = 0;
    this.delayMs = 0;
    this.policy = null;
    this.at = 0;
  }
}

/** The hand bucket returning a result object: what a promise of a result costs beyond a boolean. */
function handBucketWithResult() {
  const take = handBucket();
  return (key) => new Result(take(key));
}

const contenders = [
  ['hand bucket (await)', (await CONTENDERS['hand bucket (await)']()).call],
  ['hand bucket returning a result (await)', handBucketWithResult()],
  ['rl token-bucket: await consume', (await CONTENDERS['rl token-bucket']()).call],
  ['rl fixed-window: await consume', (await CONTENDERS['rl fixed-window']()).call],
  ['express-rate-limit increment', (await CONTENDERS['express-rate-limit MemoryStore']()).call],
];
const AsyncFunction = (async () => {}).constructor;
const runners = contenders.map(([name, call]) => {
  // A loop of its own per contender (its own feedback), so that no call site is shared between them.
  const loop = new AsyncFunction(
    'call',
    'keys',
    'ms',
    `
    let ops = 0, i = 0;
    const n = keys.length, start = performance.now();
    let t = start;
    while (t < start + ms) {
      for (let j = 0; j < 2048; j++) {
        const d = await call(keys[i]);
        if (d !== true && d.allowed !== true && d !== false && d.allowed !== false) throw new Error('no decision');
        if (++i === n) i = 0;
      }
      ops += 2048;
      t = performance.now();
    }
    return (ops / (t - start)) * 1000;`,
  );
  return { name, run: (ms) => loop(call, keys, ms), samples: [] };
});
for (const r of runners) await r.run(Math.max(300, nKeys / 500));
for (let round = 0; round < rounds; round++) {
  for (const r of round % 2 ? [...runners].reverse() : runners) r.samples.push(await r.run(sliceMs));
}
const base = median(runners[0].samples);
console.log(
  `${nKeys} keys, ${rounds} rounds of ${sliceMs} ms, median decisions/s and ratio to the awaited hand bucket:`,
);
for (const r of runners)
  console.log(
    `  ${r.name.padEnd(40)} ${(median(r.samples) / 1e6).toFixed(3)}M/s  ${(median(r.samples) / base).toFixed(2)}`,
  );
process.exit(0);
