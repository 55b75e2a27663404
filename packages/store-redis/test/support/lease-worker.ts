/**
 * One process of the quota-lease test (leases.test.ts), forked once and given jobs over IPC. A job
 * (`{ job: LeaseJob }`) connects a RedisStore with the defaults users get (batching, the deny cache,
 * the 50 ms timeout, ioredis's own options) and a limiter with `lease: { units }` on a fixed window;
 * `rounds`: each round is a window of its own (the app clock moves one window per round), and the
 * process makes `perRound` decisions in it with `consumers` concurrent consumers, then reports what
 * it admitted per round. `hold`: takes one block, reports `{ holding }`, and waits to be killed.
 * `spend` (without a store timeout): makes `perRound` decisions with `consumers` concurrent consumers
 * and stops, mid-traffic (a block it asked for may be in flight), waits until Redis has run every call
 * it sent, reports `{ spent }` (the units it admitted), and waits to be killed.
 */
import { Cluster, Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { LIMIT_PREFIX, roundTime, type LeaseJob, type LeaseResult } from './lease-job.js';
import { serveJobs } from './worker-ipc.js';

async function run(job: LeaseJob): Promise<LeaseResult> {
  const client = 'url' in job.target ? new Redis(job.target.url) : new Cluster(job.target.nodes);
  const store = new RedisStore({ client, prefix: job.prefix });
  let round = job.firstRound;
  const limiter = createLimiter({
    algorithm: fixedWindow({ limit: job.limit, window: '1h' }),
    store,
    clock: () => roundTime(round),
    lease: { units: job.units, ttl: '1m' },
    prefix: LIMIT_PREFIX,
    // `spend` counts what the store charged: no block may time out and come back later, given back.
    ...(job.mode === 'spend' && { timeout: false as const }),
  });
  await client.ping();
  const result: LeaseResult = { admitted: [], failed: 0 };
  if (job.mode === 'hold') {
    const d = await limiter.consume(job.key);
    process.send!({ holding: d.allowed });
    await new Promise(() => undefined);
  }
  if (job.mode === 'spend') {
    let admitted = 0;
    let left = job.perRound;
    await Promise.all(
      Array.from({ length: job.consumers }, async () => {
        while (left-- > 0) if ((await limiter.consume(job.key)).allowed) admitted++;
      }),
    );
    // A peek of the key is sent after the block asked for last (the batch flushed), on the same
    // connection to the key's node: once answered, Redis has charged every block this process asked for.
    await new Promise((resolve) => setImmediate(resolve));
    await limiter.peek(job.key);
    process.send!({ spent: admitted });
    await new Promise(() => undefined);
  }
  const go = new Promise<void>((resolve) => process.once('message', () => resolve()));
  process.send!({ ready: true });
  await go;
  for (let r = 0; r < job.rounds; r++) {
    round = job.firstRound + r;
    let admitted = 0;
    let left = job.perRound;
    await Promise.all(
      Array.from({ length: job.consumers }, async () => {
        while (left-- > 0) {
          const d = await limiter.consume(job.key);
          if (d.reason === 'timeout' || d.reason === 'store-error') result.failed++;
          if (d.allowed) admitted++;
        }
      }),
    );
    result.admitted.push(admitted);
  }
  await limiter.close();
  client.disconnect();
  return result;
}

serveJobs(run);
