#!/usr/bin/env node
/**
 * Benchmark of @rl/store-redis (not a test): decisions per second at 1 and 64 calls in flight for each
 * algorithm, through the store and through a limiter, beside rate-limiter-flexible's RateLimiterRedis
 * and a raw ioredis EVALSHA of a trivial script in the same run, and the `redis-benchmark` ceiling for
 * that EVALSHA on the same server. Also: EVALSHA round trips per decision (INFO commandstats), MEMORY
 * USAGE per key, and Redis calls per 100 denied requests under a one-key flood with the deny cache.
 *
 *   pnpm --filter @rl/store-redis build && pnpm --filter @rl/store-redis bench
 *
 * Starts its own redis-server on a free port of 127.0.0.1 (or uses REDIS_URL). Measures the built
 * package (dist). BENCH_SECONDS sets the time per measurement (default 1.5).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import {
  concurrency,
  createLimiter,
  fixedWindow,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@rl/core';
import { RedisStore } from '../dist/index.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1.5);
const KEYS = 10_000;
const IN_FLIGHT = [1, 64];

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startServer() {
  if (process.env.REDIS_URL)
    return { url: process.env.REDIS_URL, port: Number(new URL(process.env.REDIS_URL).port || 6379), stop: () => {} };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rl-bench-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  for (let i = 0; i < 200; i++) {
    if (spawnSync('redis-cli', ['-p', String(port), 'PING'], { encoding: 'utf8' }).stdout.includes('PONG'))
      return { url: `redis://127.0.0.1:${port}`, port, stop };
    await new Promise((r) => setTimeout(r, 25));
  }
  stop();
  throw new Error('redis-server did not start');
}

/** Runs `op(i)` with `inFlight` callers in a closed loop for SECONDS; returns decisions per second. */
async function measure(inFlight, op) {
  let done = 0;
  let i = 0;
  const warmUntil = performance.now() + 200;
  while (performance.now() < warmUntil) await op(i++);
  const end = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        await op(i++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

async function evalshaCalls(client) {
  const stats = await client.info('commandstats');
  return (
    Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) +
    Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0)
  );
}

const fmt = (n) => Math.round(n).toLocaleString('en-US').padStart(9);

const server = await startServer();
const admin = new Redis(server.url);
const info = await admin.info('server');
console.log(
  `Redis ${/redis_version:(\S+)/.exec(info)?.[1]} on ${server.url}; node ${process.version}; ${SECONDS}s per measurement, ${KEYS} keys; load average ${(
    await import('node:os')
  )
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);

const algorithms = [
  ['fixed window', fixedWindow({ limit: 1e9, window: '1m' })],
  ['sliding window log', slidingWindowLog({ limit: 1000, window: '10s' })],
  ['sliding window counter', slidingWindowCounter({ limit: 1e9, window: '1m' })],
  ['token bucket', tokenBucket({ capacity: 1e9, refillRate: 1e9 })],
  ['leaky bucket (meter)', leakyBucket({ capacity: 1e9, leakRate: 1e9 })],
  ['leaky bucket (shape)', leakyBucket({ capacity: 1e9, leakRate: 1e9, mode: 'shape' })],
];
const leases = concurrency({ limit: 1e6, lease: '10s' });
const trivialSha = await admin.script('LOAD', 'return 1');

/** The decisions-per-second table for one ioredis client configuration. */
async function decisionsTable(title, clientOptions) {
  const client = new Redis(server.url, clientOptions);
  const store = new RedisStore({ client, prefix: 'bench:' });
  // A trivial script through the same ioredis machinery (defineCommand: EVALSHA).
  client.defineCommand('benchTrivial', { numberOfKeys: 1, lua: 'return 1' });
  const rows = [];
  const row = async (name, op) => {
    const result = [];
    for (const n of IN_FLIGHT) result.push(await measure(n, op));
    rows.push([name, ...result]);
    console.log(`${name.padEnd(50)} ${result.map(fmt).join(' ')}`);
    return result;
  };
  console.log(`\n${title}`);
  console.log(`${'decisions per second'.padEnd(50)} ${IN_FLIGHT.map((n) => `${n} in flight`.padStart(9)).join(' ')}`);
  const raw1 = await row('raw ioredis EVALSHA of "return 1"', (i) => client.benchTrivial(`k${i % KEYS}`));
  const ours = [];
  for (const [name, algorithm] of algorithms) {
    ours.push(await row(`RedisStore.consume: ${name}`, (i) => store.consume(`k${i % KEYS}`, algorithm, 1, undefined)));
  }
  await row('RedisStore.acquire + release (2 calls): concurrency', async (i) => {
    await store.acquire(`k${i % KEYS}`, leases, `l${i}`, undefined);
    await store.release(`k${i % KEYS}`, leases, `l${i}`);
  });
  for (const [name, algorithm] of [algorithms[0], algorithms[3]]) {
    const limiter = createLimiter({ algorithm, store, prefix: 'lim' });
    // Decisions not answered by Redis (a timeout, then the store-down circuit) would inflate the rate: count them.
    let notFromRedis = 0;
    await row(`limiter.consume (timeout 50 ms): ${name}`, async (i) => {
      if ((await limiter.consume(`k${i % KEYS}`)).reason !== undefined) notFromRedis++;
    });
    if (notFromRedis > 0)
      console.log(
        `  (!) ${notFromRedis} of these decisions did not come from Redis (timeout, then the circuit): not a Redis rate`,
      );
  }
  const flexible = new RateLimiterRedis({ storeClient: client, points: 1e9, duration: 60, keyPrefix: 'rlflx' });
  await row('rate-limiter-flexible RateLimiterRedis.consume', (i) => flexible.consume(`k${i % KEYS}`));
  const raw2 = await row('raw ioredis EVALSHA of "return 1" (again)', (i) => client.benchTrivial(`k${i % KEYS}`));
  const rawMean = IN_FLIGHT.map((_, j) => (raw1[j] + raw2[j]) / 2);
  console.log(
    `RedisStore.consume / raw EVALSHA (mean of the two raw rows): ${IN_FLIGHT.map((n, j) => `${n} in flight ${Math.min(...ours.map((o) => o[j] / rawMean[j])).toFixed(2)}–${Math.max(...ours.map((o) => o[j] / rawMean[j])).toFixed(2)}`).join(', ')}`,
  );
  client.disconnect();
}

await decisionsTable('ioredis defaults', {});
await decisionsTable('ioredis with enableAutoPipelining: true', { enableAutoPipelining: true });
const client = new Redis(server.url);
const store = new RedisStore({ client, prefix: 'bench:' });

// The ceiling: redis-benchmark's own EVALSHA of the trivial script on the same server.
console.log('\nredis-benchmark EVALSHA "return 1" (the server ceiling):');
for (const c of [1, 64]) {
  const out = spawnSync(
    'redis-benchmark',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(server.port),
      '-n',
      c === 1 ? '50000' : '300000',
      '-c',
      String(c),
      '-q',
      'EVALSHA',
      trivialSha,
      '0',
    ],
    { encoding: 'utf8' },
  );
  const rps = /([\d.]+) requests per second/.exec(out.stdout)?.[1];
  console.log(`  ${c} connection(s): ${rps ?? out.stdout.trim()} requests per second`);
}

// Round trips: EVALSHA calls per decision, and the Redis CPU time per call.
console.log('\nINFO commandstats over 2000 decisions each: EVALSHA calls per decision, Redis µs per call');
client.defineCommand('benchTrivial', { numberOfKeys: 1, lua: 'return 1' });
const roundTripCases = [
  ...algorithms.map(([name, algorithm]) => [name, (i) => store.consume(`rt${i % 100}`, algorithm, 1, undefined)]),
  ['concurrency (acquire)', (i) => store.acquire(`rt${i % 100}`, leases, `rt${i}`, undefined)],
  ['raw EVALSHA of "return 1"', (i) => client.benchTrivial(`rt${i % 100}`)],
];
for (const [name, op] of roundTripCases) {
  await op(-1);
  await admin.config('RESETSTAT');
  for (let i = 0; i < 2000; i++) await op(i);
  const stats = await admin.info('commandstats');
  const evalsha = /cmdstat_evalsha:calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/.exec(stats);
  const evals = Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0);
  console.log(
    `  ${name.padEnd(28)} ${((Number(evalsha?.[1] ?? 0) + evals) / 2000).toFixed(3)} round trips, ${evalsha?.[2]} µs`,
  );
}

// Memory per key.
console.log(
  '\nMEMORY USAGE bytes per key, compact layout (32,000 IPv4-like keys in 256 buckets: 125 per bucket, as two million keys in the default 16384):',
);
const compactStore = new RedisStore({ client, prefix: 'rlmem:', buckets: 256 });
const compactCases = [
  ['fixed window', fixedWindow({ limit: 100, window: '1m' })],
  ['sliding window counter', slidingWindowCounter({ limit: 100, window: '1m' })],
  ['token bucket', tokenBucket({ capacity: 100, refillRate: 10 })],
  ['leaky bucket', leakyBucket({ capacity: 100, leakRate: 10 })],
];
const ipKeys = Array.from({ length: 32_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
for (const [name, algorithm] of compactCases) {
  for (let i = 0; i < ipKeys.length; i += 500)
    await Promise.all(ipKeys.slice(i, i + 500).map((key) => compactStore.consume(key, algorithm, 1, undefined)));
  const buckets = new Set(ipKeys.map((key) => compactStore.redisKeys(key, algorithm)[0]));
  let bytes = 0;
  for (const bucket of buckets) bytes += await admin.memory('USAGE', bucket, 'SAMPLES', '0');
  console.log(`  ${name.padEnd(32)} ${(bytes / ipKeys.length).toFixed(1).padStart(6)}`);
  await admin.del(...buckets);
}
console.log('\nMEMORY USAGE bytes per limit, keys of their own (key "rl:{api:user:12345}:<tag>"):');
const memStore = new RedisStore({ client, prefix: 'rl:' });
const memoryCases = [
  ['sliding window log, 1 record', slidingWindowLog({ limit: 100, window: '1m' }), 1],
  ['sliding window log, 100 records', slidingWindowLog({ limit: 100, window: '1m' }), 100],
  ['concurrency, 1 lease', concurrency({ limit: 100 }), 1],
  ['concurrency, 100 leases', concurrency({ limit: 100 }), 100],
];
for (const [name, algorithm, n] of memoryCases) {
  const key = 'api:user:12345';
  await memStore.reset(key, algorithm);
  for (let i = 0; i < n; i++) {
    if (algorithm.kind === 'concurrency')
      await memStore.acquire(key, algorithm, `lease-${i.toString(36).padStart(8, '0')}`, undefined);
    else await memStore.consume(key, algorithm, 1, undefined);
  }
  let bytes = 0;
  for (const k of memStore.redisKeys(key, algorithm)) bytes += await admin.memory('USAGE', k);
  console.log(`  ${name.padEnd(32)} ${String(bytes).padStart(6)}`);
  await memStore.reset(key, algorithm);
}

// Deny cache under a flood from one key.
console.log('\nDeny cache, one key flooded with 10,000 requests after its limit is used up:');
for (const inFlight of [1, 64]) {
  const limiter = createLimiter({
    algorithm: tokenBucket({ capacity: 10, refillRate: 1, interval: '1h' }),
    store,
    prefix: `flood${inFlight}`,
  });
  for (let i = 0; i < 10; i++) await limiter.consume('k');
  const before = await evalshaCalls(admin);
  for (let sent = 0; sent < 10_000; sent += inFlight)
    await Promise.all(Array.from({ length: inFlight }, () => limiter.consume('k')));
  const calls = (await evalshaCalls(admin)) - before;
  console.log(
    `  ${inFlight} in flight: ${calls} Redis calls, ${((calls / 10_000) * 100).toFixed(2)} per 100 denied requests`,
  );
}

client.disconnect();
admin.disconnect();
server.stop();
