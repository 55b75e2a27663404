// One contender, one key set, in a fresh process: warm up, then count decisions for `runMs`.
// argv: <contender> <keys> <warmMs> <runMs>
import { CONTENDERS } from '../lib/memory-contenders.mjs';
import { ipKey, report } from '../lib/common.mjs';

const [name, nKeys, warmMs, runMs] = [
  process.argv[2],
  Number(process.argv[3]),
  Number(process.argv[4]),
  Number(process.argv[5]),
];
const c = await CONTENDERS[name]();
if (c.skip) {
  report({ name, keys: nKeys, skipped: c.skip, opsPerSec: NaN });
  process.exit(0);
}
const keys = Array.from({ length: nKeys }, (_, i) => ipKey(i));
const call = c.call;
const BATCH = 2048;

async function loopAsync(ms) {
  let ops = 0;
  let admitted = 0;
  let i = 0;
  const n = keys.length;
  const start = performance.now();
  const end = start + ms;
  let t = start;
  while (t < end) {
    for (let j = 0; j < BATCH; j++) {
      const d = await call(keys[i]);
      if (d === true || d.allowed === true || d.remainingPoints >= 0) admitted++;
      if (++i === n) i = 0;
    }
    ops += BATCH;
    t = performance.now();
  }
  return { ops, admitted, ms: t - start };
}

function loopSync(ms) {
  let ops = 0;
  let admitted = 0;
  let i = 0;
  const n = keys.length;
  const start = performance.now();
  const end = start + ms;
  let t = start;
  while (t < end) {
    for (let j = 0; j < BATCH; j++) {
      const d = call(keys[i]);
      if (d === true || d.allowed === true) admitted++;
      if (++i === n) i = 0;
    }
    ops += BATCH;
    t = performance.now();
  }
  return { ops, admitted, ms: t - start };
}

const loop = c.sync ? loopSync : loopAsync;
// Every key once (state exists before timing), then warm-up, then the measured run.
await loop(1);
for (let k = 0; k < keys.length; k++) await call(keys[k]);
await loop(warmMs);
const r = await loop(runMs);
c.close?.();
report({ name, keys: nKeys, opsPerSec: (r.ops / r.ms) * 1000, admittedShare: r.admitted / r.ops });
process.exit(0);
