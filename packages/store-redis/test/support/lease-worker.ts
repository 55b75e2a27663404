/**
 * One process of the quota-lease test (leases.test.ts), forked once and given jobs over IPC. A job
 * (`{ job: LeaseJob }`) connects a RedisStore with the defaults users get (batching, the deny cache,
 * the 50 ms timeout, ioredis's own options) and a limiter with `lease: { units }` on a fixed window;
 * `rounds`: each round is a window of its own (the app clock moves one window per round), and the
 * process makes `perRound` decisions in it with `consumers` concurrent consumers, then reports what
 * it admitted per round. `hold`: takes one block, reports `{ holding }`, and waits to be killed.
 */
import { Cluster, Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { serveJobs } from './worker-ipc.js';

export interface LeaseJob {
  target: { url: string } | { nodes: { host: string; port: number }[] };
  mode: 'rounds' | 'hold';
  prefix: string;
  key: string;
  limit: number;
  units: number;
  rounds: number;
  perRound: number;
  consumers: number;
  /** The round the clock starts at (a `hold` job and the rounds after it share a window). */
  firstRound: number;
}

export interface LeaseResult {
  /** Admitted per round. */
  admitted: number[];
  /** Decisions not from the store or a block (a timeout, a store error): reported, not expected. */
  failed: number;
}

const WINDOW_MS = 3_600_000;

async function run(job: LeaseJob): Promise<LeaseResult> {
  const client = 'url' in job.target ? new Redis(job.target.url) : new Cluster(job.target.nodes);
  const store = new RedisStore({ client, prefix: job.prefix });
  let round = job.firstRound;
  const limiter = createLimiter({
    algorithm: fixedWindow({ limit: job.limit, window: '1h' }),
    store,
    clock: () => round * WINDOW_MS + 1,
    lease: { units: job.units, ttl: '1m' },
  });
  await client.ping();
  const result: LeaseResult = { admitted: [], failed: 0 };
  if (job.mode === 'hold') {
    const d = await limiter.consume(job.key);
    process.send!({ holding: d.allowed });
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
