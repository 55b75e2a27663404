// Heap bytes per key: one contender, `n` keys, in a fresh process run with --expose-gc.
// argv: <contender> <n>. Counts heapUsed + arrayBuffers (the memory store keeps state in typed arrays).
import { createLimiter } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RL_ALGORITHMS, handBucket, BIG } from '../lib/memory-contenders.mjs';
import { ipKey, report } from '../lib/common.mjs';

const [name, n] = [process.argv[2], Number(process.argv[3])];

export const HEAP_CONTENDERS = [
  'Set of key strings (floor)',
  'hand Map of {tokens,last}',
  ...Object.keys(RL_ALGORITHMS).map((a) => `rl ${a}`),
  'rate-limiter-flexible Memory',
  'express-rate-limit MemoryStore',
];

async function make() {
  if (name === 'Set of key strings (floor)') {
    const set = new Set();
    return { add: (k) => void set.add(k), keep: set };
  }
  if (name === 'hand Map of {tokens,last}') {
    const take = handBucket();
    return { add: (k) => void take(k), keep: take };
  }
  if (name.startsWith('rl ')) {
    const store = new MemoryStore({ maxKeys: 2 * n, sweepInterval: false });
    const limiter = createLimiter({ algorithm: RL_ALGORITHMS[name.slice(3)](), store });
    return { add: (k) => limiter.consume(k), keep: limiter, check: () => store.keyCount };
  }
  if (name === 'rate-limiter-flexible Memory') {
    const { RateLimiterMemory } = await import('rate-limiter-flexible');
    const rlf = new RateLimiterMemory({ points: BIG, duration: 600 });
    return { add: (k) => rlf.consume(k), keep: rlf };
  }
  if (name === 'express-rate-limit MemoryStore') {
    const { MemoryStore: ErlStore } = await import('express-rate-limit');
    const store = new ErlStore();
    store.init({ windowMs: 600_000 });
    store.interval?.unref?.();
    return { add: (k) => store.increment(k), keep: store };
  }
  throw new Error(`unknown contender ${name}`);
}

const used = () => {
  for (let i = 0; i < 4; i++) globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const c = await make();
// Warm the code paths on keys outside the measured set, so compiled code is in the baseline.
const before = used();
for (let i = 0; i < n; i++) {
  const r = c.add(ipKey(i));
  if (r instanceof Promise && (i & 1023) === 0) await r;
}
await new Promise((r) => setImmediate(r));
const after = used();
report({ name, keys: n, bytesPerKey: (after - before) / n, held: c.check?.(), keep: typeof c.keep });
process.exit(0);
