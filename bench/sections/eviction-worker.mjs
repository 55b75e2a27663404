// A flood of distinct keys through a memory store with maxKeys, in a fresh process: the cost per new
// key before the store fills, and at capacity (each new key evicts one) over `evictions` evictions.
// `lockout`: each new key is a client blocked at its second request (a fixed window of 1 with
// blockDuration), so that each new key also starts a block (the block table at maxKeys).
// argv: <algorithm> <maxKeys> <evictions> <chunk>
import { createLimiter, fixedWindow } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { report } from '../lib/common.mjs';
import { RL_ALGORITHMS } from '../lib/memory-contenders.mjs';

const [algorithm, maxKeys, evictions, chunk] = [
  process.argv[2],
  Number(process.argv[3]),
  Number(process.argv[4]),
  Number(process.argv[5]),
];
const store = new MemoryStore({ maxKeys, sweepInterval: false });
const lockout = algorithm === 'lockout';
const limiter = lockout
  ? createLimiter({ algorithm: fixedWindow({ limit: 1, window: '1h' }), blockDuration: '1h', store })
  : createLimiter({ algorithm: RL_ALGORITHMS[algorithm](), store });

let next = 0;
/** µs per new key over `n` new keys (for `lockout`, its two requests: admitted, then denied and blocked). */
function flood(n) {
  const start = performance.now();
  if (lockout) {
    for (let i = 0; i < n; i++) {
      const key = `flood:${next++}`;
      limiter.consumeSync(key);
      if (limiter.consumeSync(key).allowed) throw new Error(`${key} was not blocked`);
    }
  } else {
    for (let i = 0; i < n; i++) limiter.consumeSync(`flood:${next++}`);
  }
  return ((performance.now() - start) * 1000) / n;
}

const beforeFull = flood(maxKeys);
if (store.keyCount !== maxKeys) throw new Error(`expected ${maxKeys} keys, found ${store.keyCount}`);
const chunks = [];
for (let done = 0; done < evictions; done += chunk) chunks.push(flood(chunk));
if (store.keyCount !== maxKeys) throw new Error(`expected ${maxKeys} keys at capacity, found ${store.keyCount}`);
const atCapacity = chunks.reduce((a, b) => a + b, 0) / chunks.length;
report({
  algorithm,
  maxKeys,
  evictions,
  beforeFull,
  atCapacity,
  first: chunks[0],
  last: chunks[chunks.length - 1],
  max: Math.max(...chunks),
});
process.exit(0);
