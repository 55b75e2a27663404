// Section 2: heap bytes per key at one million keys, beside the peers and a bare Set (the floor).
import path from 'node:path';
import { BENCH_DIR, runWorker, verdict } from '../lib/common.mjs';
import { RL_ALGORITHMS } from '../lib/memory-contenders.mjs';

const WORKER = path.join(BENCH_DIR, 'sections/heap-worker.mjs');
export const CONTENDERS = [
  'Set of key strings (floor)',
  'hand Map of {tokens,last}',
  ...Object.keys(RL_ALGORITHMS).map((a) => `rl ${a}`),
  'rate-limiter-flexible Memory',
  'express-rate-limit MemoryStore',
];

export const title = '2. Heap bytes per key at one million keys';

export async function run({ quick, log, cpu = 0 }) {
  const n = quick ? 200_000 : 1_000_000;
  const results = {};
  for (const name of CONTENDERS) {
    results[name] = await runWorker(WORKER, [name, String(n)], {
      nodeArgs: ['--expose-gc', '--max-old-space-size=2048'],
      cpu,
      timeoutMs: 120_000,
    });
    log(`  ${name}: ${results[name].bytesPerKey.toFixed(1)} B/key`);
  }
  const floor = results['Set of key strings (floor)'].bytesPerKey;
  const rows = CONTENDERS.map((name) => {
    const b = results[name].bytesPerKey;
    return [name, b, b - floor, b / floor];
  });
  const targets = ['token-bucket', 'leaky-bucket'].map((a) => {
    const above = results[`rl ${a}`].bytesPerKey - floor;
    return {
      target: `heap per key, rl ${a}: <= 40 B above the Set`,
      value: above,
      ok: above <= 40,
      verdict: verdict(above <= 40),
    };
  });
  return {
    tables: [
      {
        caption: `${n.toLocaleString('en')} IPv4-like keys (10.a.b.c), each contender in a fresh process; heapUsed + arrayBuffers after gc, minus the same before`,
        headers: ['contender', 'bytes/key', 'above Set', 'x Set'],
        rows,
      },
    ],
    targets,
    raw: { keys: n, results },
  };
}
