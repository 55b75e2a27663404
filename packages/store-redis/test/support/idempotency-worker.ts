/**
 * One process of the idempotency test (idempotency.test.ts), forked and given one job over IPC: it
 * connects a RedisStore with the defaults users get (batching, the deny cache, the 50 ms timeout,
 * ioredis's own options) and retries each of `ids` `retries` times, all in flight at once, on one key
 * of a fixed window whose ids replay `maxReplays` times; reports how many were admitted and how many
 * were replays.
 */
import { Cluster, Redis } from 'ioredis';
import { createLimiter, fixedWindow, receiptOf } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { serveJobs } from './worker-ipc.js';

export interface IdempotencyJob {
  target: { url: string } | { nodes: { host: string; port: number }[] };
  prefix: string;
  ids: string[];
  retries: number;
  maxReplays: number;
}

export interface IdempotencyResult {
  admitted: number;
  replayed: number;
  failed: number;
  /** The ids of which some decision came from Redis (no `reason`): those Redis charged for sure. */
  answeredIds: string[];
}

async function run(job: IdempotencyJob): Promise<IdempotencyResult> {
  const client = 'url' in job.target ? new Redis(job.target.url) : new Cluster(job.target.nodes);
  // The job's prefix is the store's, the namespace of the test; the limit's own is chosen, empty: its keys are the ones the test's peek reads.
  const store = new RedisStore({ client, prefix: job.prefix });
  const limiter = createLimiter({
    algorithm: fixedWindow({ limit: 1000, window: '1h' }),
    store,
    prefix: '',
    idempotencyMaxReplays: job.maxReplays,
  });
  try {
    // The client connected (a Cluster's slots known) before the burst.
    await limiter.peek('shared');
    const attempts = job.ids.flatMap((id) => Array.from({ length: job.retries }, () => id));
    const decisions = await Promise.all(attempts.map((id) => limiter.consume('shared', 1, { idempotencyKey: id })));
    return {
      answeredIds: [...new Set(attempts.filter((_, i) => decisions[i]!.reason === undefined))],
      admitted: decisions.filter((d) => d.allowed).length,
      replayed: decisions.filter((d) => receiptOf(d).took === 'replayed').length,
      failed: decisions.filter((d) => d.reason !== undefined).length,
    };
  } finally {
    client.disconnect();
  }
}

serveJobs(run);
