/**
 * Precision under contention: 4 processes × 50 concurrent consumers on one key, against a standalone
 * Redis and a 3-master Cluster, must admit exactly the limit, never one more (and never fewer: every
 * request reaches Redis, no timeout, no deny cache); with ioredis, and with Valkey GLIDE.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { releasedTogether, useRedisDeployments, useStartedWorkers, useWorkerScript } from '@rl/test-support';
import { Cluster, Redis } from 'ioredis';
import { createLimiter, fixedWindow, slidingWindowLog, tokenBucket, type Decision } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { THREE_LIMITS, type WorkerConfig, type WorkerResult } from './support/contention-worker.js';

const PROCESSES = 4;
const CONSUMERS = 50;
const ATTEMPTS = 3;
const LIMIT = 150;
const worker = useWorkerScript(fileURLToPath(new URL('./support/contention-worker.ts', import.meta.url)));

const workers = useStartedWorkers(worker, PROCESSES);

const redis = useRedisDeployments('contention');

/** Gives every worker the job, releases them together once all are connected, and collects their results. */
async function contend(
  config: Omit<WorkerConfig, 'consumers' | 'attempts' | 'limit'>,
  consumers = CONSUMERS,
): Promise<WorkerResult[]> {
  const job: WorkerConfig = { ...config, consumers, attempts: ATTEMPTS, limit: LIMIT };
  return releasedTogether<WorkerResult>(
    workers.all,
    workers.all.map(() => job),
  );
}

/** A peek's remaining units, once it is known to come from Redis (no `reason`: not the failure policy's answer). */
function remainingInRedis(decision: Decision): number {
  expect(decision.reason).toBeUndefined();
  return decision.remaining;
}

const kinds = ['fixed-window', 'sliding-window-log', 'token-bucket', 'concurrency'] as const;

describe.each([
  { name: 'standalone', client: 'ioredis', target: () => ({ url: redis.url }) },
  { name: 'cluster', client: 'ioredis', target: () => ({ nodes: [...redis.nodes] }) },
  { name: 'standalone', client: 'glide', target: () => ({ url: redis.url }) },
  { name: 'cluster', client: 'glide', target: () => ({ nodes: [...redis.nodes] }) },
] as const)('contention on $name Redis ($client)', ({ name, client, target }) => {
  it.each(kinds)(`${PROCESSES} processes × ${CONSUMERS} consumers admit exactly the limit: %s`, async (kind) => {
    const results = await contend({
      target: target(),
      client,
      kind,
      key: 'hot-key',
      prefix: `contention:${name}:${client}:${kind}:${Date.now()}:`,
    });
    const admitted = results.reduce((sum, r) => sum + r.admitted, 0);
    const denied = results.reduce((sum, r) => sum + r.denied, 0);
    expect(results.every((r) => r.notFromStore === 0)).toBe(true);
    expect(admitted + denied).toBe(PROCESSES * CONSUMERS * ATTEMPTS);
    expect(admitted).toBe(LIMIT);
  });
});

describe.each([
  { name: 'standalone', target: () => ({ url: redis.url }) },
  { name: 'cluster', target: () => ({ nodes: [...redis.nodes] }) },
])('reservations across processes on $name Redis', ({ name, target }) => {
  it(`${PROCESSES} processes × ${CONSUMERS} consumers queue in one FIFO: every admitted reservation has a slot of its own`, async () => {
    const results = await contend({
      target: target(),
      kind: 'reserve',
      key: 'hot-key',
      prefix: `contention:${name}:reserve:${Date.now()}:`,
    });
    expect(results.every((r) => r.notFromStore === 0)).toBe(true);
    // 50 tokens at once, then one every 20 ms up to the 1 s maxDelay (a frozen clock: nothing refills
    // meanwhile): 100 reservations, 50 without delay and one for each 20 ms slot, whichever process asked.
    const delays = results.flatMap((r) => r.delays!).sort((a, b) => a - b);
    expect(delays).toEqual([
      ...Array.from({ length: 50 }, () => 0),
      ...Array.from({ length: 50 }, (_, i) => (i + 1) * 20),
    ]);
    expect(results.reduce((sum, r) => sum + r.denied, 0)).toBe(PROCESSES * CONSUMERS * ATTEMPTS - 100);
  });
});

describe.each([
  { name: 'standalone', target: () => ({ url: redis.url }) },
  { name: 'cluster', target: () => ({ nodes: [...redis.nodes] }) },
])('a request\u2019s three limits at once on $name Redis', ({ name, target }) => {
  it(`${PROCESSES} processes × 60 consumers on 3 limits: 0 over-admitted, 0 under-admitted, nothing left charged by a denial`, async () => {
    const prefix = `contention:${name}:three:${Date.now()}:`;
    // On a Cluster the keys name one hash tag, so the three limits share a slot (one call, all-or-nothing).
    const key = name === 'cluster' ? '{hot-key}' : 'hot-key';
    const results = await contend({ target: target(), kind: 'three-limits', key, prefix }, 60);
    expect(results.every((r) => r.notFromStore === 0)).toBe(true);
    expect(results.reduce((sum, r) => sum + r.admitted + r.denied, 0)).toBe(PROCESSES * 60 * ATTEMPTS);
    // The bucket (120) binds before the window (150); the per-process logs (4 × 40) cannot bind first.
    expect(results.reduce((sum, r) => sum + r.admitted, 0)).toBe(THREE_LIMITS.bucket);
    const t = target();
    const client = 'url' in t ? new Redis(t.url) : new Cluster(t.nodes);
    try {
      const store = new RedisStore({ client, prefix });
      // A new client's first call waits for its connection (a Cluster's for its slot table too): with the
      // default 50 ms timeout a loaded machine's check would read the failure policy's `remaining: 0`.
      const options = { store, clock: () => 1_000_000, timeout: false } as const;
      const window = createLimiter({
        ...options,
        prefix: 'w',
        algorithm: fixedWindow({ limit: THREE_LIMITS.window, window: '1h' }),
      });
      const bucket = createLimiter({
        ...options,
        prefix: 'b',
        algorithm: tokenBucket({ capacity: THREE_LIMITS.bucket, refillRate: 1, interval: '1d' }),
      });
      const log = createLimiter({
        ...options,
        prefix: 'p',
        algorithm: slidingWindowLog({ limit: THREE_LIMITS.perProcess, window: '1h' }),
      });
      // Each limit holds exactly the admitted requests: no denial left a charge behind.
      expect(remainingInRedis(await window.peek(key))).toBe(THREE_LIMITS.window - THREE_LIMITS.bucket);
      expect(remainingInRedis(await bucket.peek(key))).toBe(0);
      const used = await Promise.all(
        results.map(async (r) => THREE_LIMITS.perProcess - remainingInRedis(await log.peek(`${key}:${r.pid}`))),
      );
      expect(used).toEqual(results.map((r) => r.admitted));
    } finally {
      client.disconnect();
    }
  });
});
