import { createLimiter, tokenBucket } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
const mode = process.argv[2];
const observer = mode === 'noop' ? { decision() {} } : mode === 'err' ? { storeError() {} } : undefined;
const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 1e9, refillRate: 1e9 }), store: new MemoryStore({ sweepInterval: false }), observer });
const keys = Array.from({ length: 100000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
const sync = process.argv[3] === 'sync';
const t = performance.now(); let n = 0;
while (performance.now() - t < 3000) { for (let j = 0; j < 1000; j++) { if (sync) limiter.consumeSync(keys[n % 100000]); else await limiter.consume(keys[n % 100000]); n++; } }
console.log(mode, sync, ((performance.now() - t) * 1000 / n).toFixed(3), 'us');
