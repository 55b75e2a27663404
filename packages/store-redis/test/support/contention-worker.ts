/**
 * One process of the contention test, started once by contention.test.ts with `fork()` and given jobs
 * over IPC. For each job (`{ job: WorkerConfig }`) it connects, answers `{ ready }`, waits for `'go'`
 * (so that all processes start together), lets `consumers` concurrent consumers hammer one key through
 * a limiter on a RedisStore until each has made `attempts` requests, and answers `{ result }`.
 */
import { Cluster, Redis } from 'ioredis';
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import {
  combineLimiters,
  concurrency,
  createLimiter,
  fixedWindow,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Decision,
} from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { serveJobs } from './worker-ipc.js';

export interface WorkerConfig {
  target: { url: string } | { nodes: { host: string; port: number }[] };
  /** The client the worker's store is given: ioredis 6 (the default), or Valkey GLIDE. */
  client?: 'ioredis' | 'glide';
  /**
   * `reserve`: reservations (`maxDelay` 1 s, the bucket's horizon) on a token bucket of 50 tokens
   * refilled at 50 per second. `three-limits`: each request through three limits at once (see
   * {@link threeLimits}).
   */
  kind: 'fixed-window' | 'sliding-window-log' | 'token-bucket' | 'concurrency' | 'reserve' | 'three-limits';
  limit: number;
  key: string;
  prefix: string;
  consumers: number;
  attempts: number;
}

export interface WorkerResult {
  admitted: number;
  denied: number;
  /** Decisions that did not come from Redis (reason set): must be 0. */
  notFromStore: number;
  /** Time from 'go' to the last decision (for information). */
  elapsedMs?: number;
  /** `reserve`: the delay of each admitted reservation (ms). */
  delays?: number[];
  /** The worker's process id (`three-limits` keys a limit by it). */
  pid: number;
}

/**
 * The three limits of `three-limits`, none of which recovers during the test: a fixed window of 150
 * and a token bucket of 120 on the shared key (prefixes `w` and `b`), and a sliding log of 40 per
 * process (prefix `p`, the key and the process id).
 */
export const THREE_LIMITS = { window: 150, bucket: 120, perProcess: 40 } as const;

function threeLimits(store: RedisStore, config: WorkerConfig) {
  const options = { store, timeout: false, denyCache: false, clock: () => 1_000_000 } as const;
  const group = combineLimiters([
    createLimiter({ ...options, prefix: 'w', algorithm: fixedWindow({ limit: THREE_LIMITS.window, window: '1h' }) }),
    createLimiter({
      ...options,
      prefix: 'b',
      algorithm: tokenBucket({ capacity: THREE_LIMITS.bucket, refillRate: 1, interval: '1d' }),
    }),
    createLimiter({
      ...options,
      prefix: 'p',
      algorithm: slidingWindowLog({ limit: THREE_LIMITS.perProcess, window: '1h' }),
    }),
  ]);
  const keys = [config.key, config.key, `${config.key}:${process.pid}`];
  return (): Promise<Decision> => group.consume(keys);
}

function algorithmOf(config: WorkerConfig): Algorithm {
  switch (config.kind) {
    case 'three-limits':
    case 'fixed-window':
      return fixedWindow({ limit: config.limit, window: '1h' });
    case 'sliding-window-log':
      return slidingWindowLog({ limit: config.limit, window: '1h' });
    case 'token-bucket':
      // Refills one token a day: no refill can happen during the test.
      return tokenBucket({ capacity: config.limit, refillRate: 1, interval: '1d' });
    case 'concurrency':
      return concurrency({ limit: config.limit, lease: '1h' });
    case 'reserve':
      return tokenBucket({ capacity: 50, refillRate: 50, interval: '1s' });
  }
}

/** The job's client, connected, and what closes it. */
async function connect(config: WorkerConfig): Promise<{ client: RedisClient; close(): void }> {
  const { target } = config;
  if (config.client === 'glide') {
    Logger.setLoggerConfig('off');
    const addresses =
      'url' in target ? [{ host: new URL(target.url).hostname, port: Number(new URL(target.url).port) }] : target.nodes;
    const glide =
      'url' in target
        ? await GlideClient.createClient({ addresses })
        : await GlideClusterClient.createClient({ addresses });
    return { client: glide as unknown as RedisClient, close: () => glide.close() };
  }
  const ioredis = 'url' in target ? new Redis(target.url) : new Cluster(target.nodes);
  await ioredis.ping();
  return { client: ioredis, close: () => ioredis.disconnect() };
}

async function run(config: WorkerConfig): Promise<WorkerResult> {
  const { client, close } = await connect(config);
  const store = new RedisStore({ client, prefix: config.prefix });
  const algorithm = algorithmOf(config);
  // Fixed window: a fixed app clock, so a window boundary can never fall inside the test. The others
  // use Redis TIME. No timeout (a slow 2-core machine must not turn into denials) and no deny cache
  // (every request goes to Redis).
  const grouped = config.kind === 'three-limits' ? threeLimits(store, config) : undefined;
  const limiter = createLimiter({
    algorithm,
    store,
    // A namespace of its own under the store's (the job's), as an app gives its limits.
    prefix: 'hot',
    timeout: false,
    denyCache: false,
    ...(config.kind === 'fixed-window' || config.kind === 'reserve' ? { clock: () => 1_000_000 } : {}),
  });
  const result: WorkerResult = {
    admitted: 0,
    denied: 0,
    notFromStore: 0,
    pid: process.pid,
    ...(config.kind === 'reserve' && { delays: [] }),
  };
  const go = new Promise<void>((resolve) => process.once('message', () => resolve()));
  process.send!({ ready: true });
  await go;
  const startedAt = Date.now();
  await Promise.all(
    Array.from({ length: config.consumers }, async () => {
      for (let i = 0; i < config.attempts; i++) {
        const decision =
          grouped !== undefined
            ? await grouped()
            : config.kind === 'concurrency'
              ? await limiter.acquire(config.key)
              : config.kind === 'reserve'
                ? await limiter.reserve(config.key, 1, { maxDelay: '1s' })
                : await limiter.consume(config.key);
        if (config.kind === 'reserve' && decision.allowed) result.delays!.push(decision.delayMs);
        if (decision.reason !== undefined) result.notFromStore++;
        if (decision.allowed) result.admitted++;
        else result.denied++;
      }
    }),
  );
  result.elapsedMs = Date.now() - startedAt;
  close();
  return result;
}

serveJobs(run);
