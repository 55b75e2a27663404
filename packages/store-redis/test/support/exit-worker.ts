/**
 * One process of exit.test.ts: a script that is denied and then closes its Redis client, as a worker
 * or a one-off job does. It connects a client of the family it is given (`RL_EXIT_JOB`, JSON of
 * {@link ExitJob}), makes a limiter (default deny cache) deny one key, waits `closeAfterMs` after
 * that denial was cached (the store then opens its subscriber connection), closes its client by
 * `quit()` or at once (`disconnect()`, node-redis 5+ `close()` / `destroy()`), and does nothing more:
 * it must exit by itself. It says `denied` on stdout once the denial is cached, so that the test knows
 * a process that hangs got that far.
 */
import { Cluster as Ioredis6Cluster, Redis as Ioredis6 } from 'ioredis';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import { createClient, createCluster, createSentinel } from 'redis';
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { createLimiter, fixedWindow } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';

export interface ExitJob {
  /** `glide`: standalone and Cluster only (GLIDE has no Sentinel client). */
  family: 'ioredis' | 'iovalkey' | 'node-redis' | 'glide';
  target:
    | { url: string }
    | { nodes: { host: string; port: number }[] }
    | { sentinels: { host: string; port: number }[]; name: string };
  prefix: string;
  closeAfterMs: number;
  /** `quit`: the graceful close of the family; `disconnect`: at once. */
  close: 'quit' | 'disconnect';
}

interface Closable {
  on(event: 'error', listener: () => void): unknown;
  quit?(): Promise<unknown>;
  close?(): Promise<unknown> | void;
  disconnect?(): unknown;
  destroy?(): unknown;
  connect?(): Promise<unknown>;
}

async function connect(job: ExitJob): Promise<Closable> {
  const t = job.target;
  if (job.family === 'glide') {
    if ('sentinels' in t) throw new Error('GLIDE has no Sentinel client');
    Logger.setLoggerConfig('off');
    const addresses = 'url' in t ? [{ host: new URL(t.url).hostname, port: Number(new URL(t.url).port) }] : t.nodes;
    const glide =
      'url' in t ? await GlideClient.createClient({ addresses }) : await GlideClusterClient.createClient({ addresses });
    return glide as unknown as Closable;
  }
  if (job.family === 'node-redis') {
    const client = ('url' in t
      ? createClient({ url: t.url })
      : 'nodes' in t
        ? createCluster({ rootNodes: t.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) })
        : createSentinel({ name: t.name, sentinelRootNodes: t.sentinels })) as unknown as Closable;
    client.on('error', () => {});
    await client.connect!();
    return client;
  }
  type Constructor = new (options: unknown) => Closable;
  const [Redis, Cluster] = (job.family === 'ioredis'
    ? [Ioredis6, Ioredis6Cluster]
    : [Iovalkey, IovalkeyCluster]) as unknown as [Constructor, Constructor];
  const client =
    'url' in t
      ? new Redis(t.url)
      : 'nodes' in t
        ? new Cluster(t.nodes)
        : new Redis({ sentinels: t.sentinels, name: t.name });
  client.on('error', () => {});
  return client;
}

async function closeClient(client: Closable, how: ExitJob['close'], family: ExitJob['family']): Promise<void> {
  // GLIDE has one close(), at once (its pending commands rejected).
  if (family === 'glide') return void client.close!();
  if (family !== 'node-redis') {
    if (how === 'quit') await client.quit!();
    else client.disconnect!();
    return;
  }
  // node-redis 5 and later: close() and destroy() (quit() and disconnect() are deprecated aliases).
  if (how === 'quit') await client.close!();
  else client.destroy!();
}

const job = JSON.parse(process.env.RL_EXIT_JOB!) as ExitJob;
const client = await connect(job);
const store = new RedisStore({ client: client as unknown as RedisClient, prefix: job.prefix });
const limiter = createLimiter({
  algorithm: fixedWindow({ limit: 1, window: '15m' }),
  store,
  prefix: 'exit',
  clock: () => 1_800_000_000_000,
});
await limiter.consume('k');
const denied = await limiter.consume('k');
if (denied.allowed) throw new Error('the second request was admitted');
process.stdout.write('denied\n');
await new Promise((resolve) => setTimeout(resolve, job.closeAfterMs));
await closeClient(client, job.close, job.family);
