/**
 * One instance (B or C) of confirm.test.ts, in a process of its own: a client, a store and a limiter
 * with bans and the default deny cache. Over IPC: `{ job }` connects and answers `{ ready }`;
 * `{ cache: key }` requests `key` until its denial comes from the deny cache and answers
 * `{ cached }` (true once it does); `{ request: key }` requests `key` once and answers `{ decision }`.
 */
import { Cluster as Ioredis6Cluster, Redis as Ioredis6 } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { createLimiter, fixedWindow, type Limiter } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';

export interface ConfirmJob {
  family: 'ioredis' | 'node-redis';
  target: { url: string } | { nodes: { host: string; port: number }[] };
  prefix: string;
}

/** What every instance's limiter allows of a key: B and C each get one request once A lifts a denial. */
export const CONFIRM_LIMIT = 2;

/**
 * The limiter every instance uses (the test's instance A too): 2 per hour, bans and overrides, a fixed
 * clock (a cached denial never ends by itself), no timeout.
 */
export function confirmLimiter(store: RedisStore): Limiter {
  return createLimiter({
    algorithm: fixedWindow({ limit: CONFIRM_LIMIT, window: '1h' }),
    store,
    prefix: 'confirm',
    bans: true,
    overrides: true,
    timeout: false,
    clock: () => 1_800_000_000_000,
  });
}

async function connect(job: ConfirmJob): Promise<RedisClient> {
  const t = job.target;
  if (job.family === 'node-redis') {
    const client =
      'url' in t
        ? createClient({ url: t.url })
        : createCluster({ rootNodes: t.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    client.on('error', () => {});
    await client.connect();
    return client as unknown as RedisClient;
  }
  const client = 'url' in t ? new Ioredis6(t.url) : new Ioredis6Cluster(t.nodes);
  client.on('error', () => {});
  await client.ping();
  return client as unknown as RedisClient;
}

interface Message {
  job?: ConfirmJob;
  cache?: string;
  request?: string;
}

/** Answers the test's messages (see the module comment), with the limiter its job made. */
function serve(): void {
  let limiter: Limiter | undefined;
  process.on('message', (message: Message) => {
    void (async () => {
      if (message.job !== undefined) {
        const store = new RedisStore({ client: await connect(message.job), prefix: message.job.prefix });
        limiter = confirmLimiter(store);
        process.send!({ ready: true });
      } else if (message.cache !== undefined) {
        let decision = await limiter!.consume(message.cache);
        for (let i = 0; i < 300 && decision.reason !== 'deny-cache'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          decision = await limiter!.consume(message.cache);
        }
        process.send!({ cached: decision.reason === 'deny-cache' });
      } else if (message.request !== undefined) {
        const decision = await limiter!.consume(message.request);
        process.send!({ decision: { allowed: decision.allowed, reason: decision.reason ?? null } });
      }
    })().catch((error: unknown) => process.send!({ error: String(error) }));
  });
  process.send!({ started: true });
}

serve();
