/**
 * A control call resolves only once every instance's deny cache can no longer answer the old decision
 * (issue 37, item 5). Three processes: this one is instance A, two forked workers are B and C
 * (test/support/confirm-worker.ts), each with its own client, store and limiter (2 per hour, bans and
 * overrides, the default deny cache, a fixed clock so that no cached denial ends by itself). Each cycle
 * denies a fresh key one way, B and C meet the denial and cache it, A lifts it, and as soon as A's call
 * resolves B and C request the key at once: a request still denied then is stale. The ways, in turn:
 * a ban lifted by `unblock`; the limit used up, then `reset`; the limit used up, then `setOverride`
 * to a larger one. On standalone Redis and a 3-master Cluster (sharded
 * pub/sub), with ioredis and node-redis. A's `confirmTimeout` is generous: the subject is that no
 * confirmed call leaves a stale cache (this machine is shared; a late confirmation would reject the
 * call, which the test counts apart, and which must not happen either).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { fixedWindow, ResetUnconfirmedError } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import {
  nextMessage,
  useRedisDeployments,
  useStartedWorkers,
  useWorkerScript,
  type WorkerMessage,
} from '@rl/test-support';
import { CONFIRM_LIMIT, confirmLimiter, type ConfirmJob } from './support/confirm-worker.js';

/**
 * Cycles per case: before the fix at least 263 of 2,000 requests (13 %) met a stale denial (the worst
 * case, standalone ioredis: docs/design/reliability.md), so 300 cycles (600 requests) miss such a
 * regression with a chance near 0.87^600; 1,000 took a minute of the suite on a 2-core machine.
 */
const CYCLES = 300;
/** How A lifts each cycle's denial, in turn (see the module comment). */
const WAYS = ['unblock', 'reset', 'setOverride'] as const;
const worker = useWorkerScript(fileURLToPath(new URL('./support/confirm-worker.ts', import.meta.url)));

const workers = useStartedWorkers(worker, 2);

const redis = useRedisDeployments('confirm');

interface Message extends WorkerMessage {
  cached?: boolean;
  decision?: { allowed: boolean; reason: string | null };
}

/** Sends `message` to every worker and resolves to each one's answer that `matches`. */
function ask(message: object, matches: (m: Message) => boolean): Promise<Message[]> {
  const answers = workers.all.map((worker) => nextMessage<Message>(worker, matches));
  for (const worker of workers.all) worker.send(message);
  return Promise.all(answers);
}

async function clientOf(
  family: ConfirmJob['family'],
  target: ConfirmJob['target'],
): Promise<{ client: RedisClient; close(): void }> {
  if (family === 'node-redis') {
    const client =
      'url' in target
        ? createClient({ url: target.url })
        : createCluster({ rootNodes: target.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    await client.connect();
    return { client: client as unknown as RedisClient, close: () => void client.destroy() };
  }
  const client = 'url' in target ? new Redis(target.url) : new Cluster(target.nodes);
  await client.ping();
  return { client: client as unknown as RedisClient, close: () => client.disconnect() };
}

describe.each([
  { deployment: 'standalone', target: (): ConfirmJob['target'] => ({ url: redis.url }) },
  { deployment: 'cluster', target: (): ConfirmJob['target'] => ({ nodes: [...redis.nodes] }) },
])('$deployment', ({ deployment, target }) => {
  it.each(['ioredis', 'node-redis'] as const)(
    `%s: ${CYCLES} cycles of a denial cached on B and C, lifted on A (unblock, reset, setOverride), B and C at once: 0 stale`,
    async (family) => {
      const prefix = `confirm:${deployment}:${family}:${Date.now()}:`;
      const job: ConfirmJob = { family, target: target(), prefix };
      await ask({ job }, (m) => m.ready === true);
      const a = await clientOf(family, job.target);
      const store = new RedisStore({ client: a.client, prefix, confirmTimeout: 5_000 });
      const limiter = confirmLimiter(store);
      let stale = 0;
      let notCached = 0;
      let unconfirmed = 0;
      try {
        for (let cycle = 0; cycle < CYCLES; cycle++) {
          const key = `k${cycle}`;
          const way = WAYS[cycle % WAYS.length]!;
          if (way === 'unblock') await limiter.block(key, '1h');
          else for (let i = 0; i < CONFIRM_LIMIT; i++) await limiter.consume(key);
          notCached += (await ask({ cache: key }, (m) => m.cached !== undefined)).filter((m) => !m.cached).length;
          try {
            if (way === 'unblock') await limiter.unblock(key);
            else if (way === 'reset') await limiter.reset(key);
            else await limiter.setOverride(key, fixedWindow({ limit: CONFIRM_LIMIT + 2, window: '1h' }), { ttl: '1h' });
          } catch (error) {
            if (!(error instanceof ResetUnconfirmedError)) throw error;
            unconfirmed++;
          }
          stale += (await ask({ request: key }, (m) => m.decision !== undefined)).filter(
            (m) => !m.decision!.allowed,
          ).length;
        }
      } finally {
        await store.close();
        a.close();
      }
      expect({ stale, notCached, unconfirmed }).toEqual({ stale: 0, notCached: 0, unconfirmed: 0 });
    },
    600_000,
  );
});
