// One HTTP server for section 4. argv: <framework> <variant> <mode> [redisPort] [redisDb]
//   framework, variant, mode: see ../lib/http-apps.mjs
//   redisDb:   the Redis database of this server (the section runs several servers at once, each its own)
// Prints `READY <port>` once listening on 127.0.0.1. GET / answers "ok".
import Redis from 'ioredis';
import { buildApp } from '../lib/http-apps.mjs';

const [framework, variant, mode, redisPort, redisDb = '0'] = process.argv.slice(2);
const redis = variant.endsWith('redis') ? new Redis({ host: '127.0.0.1', port: Number(redisPort), db: Number(redisDb) }) : undefined;
if (redis) await redis.flushdb();
const { listen } = await buildApp({ framework, variant, mode, redis });

const port = await listen();
if (process.env.RL_BENCH_ALLOC === '1') await answerAllocationQueries();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', () => {
  redis?.disconnect();
  process.exit(0);
});

/**
 * Heap bytes allocated by this process between a `mark` and a `read` line on stdin (run with
 * --expose-gc and a young generation large enough that no collection happens in between): `mark`
 * collects, waits for the collection's report, and answers `MARKED`; `read` answers
 * `ALLOC <bytes> <collections since the mark>` (bytes are only exact when that count is 0).
 */
async function answerAllocationQueries() {
  const v8 = await import('node:v8');
  const { PerformanceObserver } = await import('node:perf_hooks');
  const { createInterface } = await import('node:readline');
  let collections = 0;
  new PerformanceObserver((list) => (collections += list.getEntries().length)).observe({ entryTypes: ['gc'] });
  let start = 0;
  createInterface({ input: process.stdin }).on('line', async (line) => {
    if (line === 'mark') {
      globalThis.gc();
      await new Promise((r) => setTimeout(r, 50));
      collections = 0;
      start = v8.getHeapStatistics().used_heap_size;
      process.stdout.write('MARKED\n');
    } else if (line === 'read') {
      process.stdout.write(`ALLOC ${v8.getHeapStatistics().used_heap_size - start} ${collections}\n`);
    }
  });
}
