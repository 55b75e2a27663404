/**
 * The Redis clients the store is tested with, each connected the way its users connect it: ioredis 6
 * (the `ioredis` package today) and 5, iovalkey, node-redis 6 (the `redis` package today), 5 and 4.
 * and Valkey GLIDE 2 (standalone and Cluster clients).
 * The older majors are npm aliases in package.json (`ioredis5`, `redis5`, `redis4`). iovalkey runs
 * against Redis: Debian 12 has no Valkey server package, and Valkey speaks the same protocol.
 *
 * Which suites run on which client (docs/design/stores.md, "Redis clients"): every client runs the whole
 * conformance suite on standalone and Cluster, {@link FULL} with the usual property runs and
 * {@link SMOKE} with few, and the parity scenario tables, SCRIPT FLUSH recovery, failure domains and
 * binary replies ({@link ALL}); {@link FULL} also run the parity property tests, and {@link FAILURE}
 * the failure tests (a stopped server, a paused one). ioredis 5 also runs every other test of the
 * package, through the shared harness clients of @rl/test-support.
 */
import { Cluster as Ioredis6Cluster, Redis as Ioredis6 } from 'ioredis';
import { Cluster as Ioredis5Cluster, Redis as Ioredis5 } from 'ioredis5';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import * as nodeRedis6 from 'redis';
import * as nodeRedis5 from 'redis5';
import * as nodeRedis4 from 'redis4';
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import type { RedisClient } from '@rl/store-redis';

export interface ClientKind {
  /** `ioredis 6`, `node-redis 5`, …: shown in the test names. */
  readonly name: string;
  readonly family: 'ioredis' | 'node-redis' | 'glide';
  /** A client of the standalone server at `url`, connected (its connection errors ignored: the failure tests stop servers). */
  standalone(url: string): Promise<RedisClient>;
  /** A client of the cluster whose masters are `nodes`, connected. */
  cluster(nodes: readonly { host: string; port: number }[]): Promise<RedisClient>;
  /** True while the client is connected and ready for commands. */
  ready(client: RedisClient): boolean;
  /** Closes the client at once (pending commands rejected). */
  close(client: RedisClient): Promise<void>;
}

interface IoredisModule {
  Redis: new (url: string) => IoredisLike;
  Cluster: new (nodes: { host: string; port: number }[]) => IoredisLike;
}
/** What a client of either family has: its `error` events. */
interface ClientLike {
  on(event: 'error', listener: () => void): unknown;
}

/** `client` once `ready` resolved, its connection errors ignored (the failure tests stop servers). */
async function connected<C extends ClientLike>(
  client: C,
  ready: (client: C) => Promise<unknown>,
): Promise<RedisClient> {
  client.on('error', () => {});
  await ready(client);
  return client as unknown as RedisClient;
}

interface IoredisLike extends ClientLike {
  status: string;
  ping(): Promise<unknown>;
  disconnect(): void;
}

/** An ioredis client answers once connected (it queues commands until then). */
const pinged = (client: IoredisLike): Promise<unknown> => client.ping();

function ioredisKind(name: string, module: IoredisModule): ClientKind {
  return {
    name,
    family: 'ioredis',
    standalone: (url) => connected(new module.Redis(url), pinged),
    cluster: (nodes) => connected(new module.Cluster([...nodes]), pinged),
    ready: (client) => (client as unknown as IoredisLike).status === 'ready',
    close: async (client) => (client as unknown as IoredisLike).disconnect(),
  };
}

interface NodeRedisModule {
  createClient(options: { url: string }): NodeRedisLike;
  createCluster(options: { rootNodes: { url: string }[] }): NodeRedisLike;
}
interface NodeRedisLike extends ClientLike {
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  /** 5 and later. */
  destroy?(): void;
  /** 4 (deprecated in 5). */
  disconnect?(): Promise<void>;
}

/** A node-redis client is used once `connect()` resolved. */
const connecting = (client: NodeRedisLike): Promise<unknown> => client.connect();

function nodeRedisKind(name: string, module: NodeRedisModule): ClientKind {
  return {
    name,
    family: 'node-redis',
    standalone: (url) => connected(module.createClient({ url }), connecting),
    cluster: (nodes) =>
      connected(
        module.createCluster({ rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) }),
        connecting,
      ),
    ready: (client) => (client as unknown as NodeRedisLike).isReady,
    close: async (client) => {
      const c = client as unknown as NodeRedisLike;
      if (typeof c.destroy === 'function') c.destroy();
      else await c.disconnect?.();
    },
  };
}

export const IOREDIS_6 = ioredisKind('ioredis 6', {
  Redis: Ioredis6,
  Cluster: Ioredis6Cluster,
} as unknown as IoredisModule);
export const IOREDIS_5 = ioredisKind('ioredis 5', {
  Redis: Ioredis5,
  Cluster: Ioredis5Cluster,
} as unknown as IoredisModule);
export const IOVALKEY = ioredisKind('iovalkey', {
  Redis: Iovalkey,
  Cluster: IovalkeyCluster,
} as unknown as IoredisModule);
export const NODE_REDIS_6 = nodeRedisKind('node-redis 6', nodeRedis6 as unknown as NodeRedisModule);
export const NODE_REDIS_5 = nodeRedisKind('node-redis 5', nodeRedis5 as unknown as NodeRedisModule);
export const NODE_REDIS_4 = nodeRedisKind('node-redis 4', nodeRedis4 as unknown as NodeRedisModule);

interface GlideLike {
  readonly isClosed: boolean;
  close(): void;
}

// GLIDE's native core logs every error reply as a warning (the NOSCRIPT the SCRIPT FLUSH tests cause):
// and a subscriber closed while it subscribes as an error: off, so that a passing run prints nothing alarming.
Logger.setLoggerConfig('off');

/**
 * Valkey GLIDE 2 (standalone `GlideClient`, `GlideClusterClient`) against Redis 7, which GLIDE speaks
 * to as to Valkey. `createClient` resolves once connected; GLIDE reconnects by itself.
 */
export const GLIDE: ClientKind = {
  name: 'GLIDE',
  family: 'glide',
  standalone: async (url) => {
    const { hostname, port } = new URL(url);
    return (await GlideClient.createClient({
      addresses: [{ host: hostname, port: Number(port) }],
    })) as unknown as RedisClient;
  },
  cluster: async (nodes) =>
    (await GlideClusterClient.createClient({
      addresses: nodes.map(({ host, port }) => ({ host, port })),
    })) as unknown as RedisClient,
  ready: (client) => !(client as unknown as GlideLike).isClosed,
  close: async (client) => (client as unknown as GlideLike).close(),
};

/** Every client the store is tested with. */
export const ALL: readonly ClientKind[] = [
  IOREDIS_6,
  IOREDIS_5,
  IOVALKEY,
  NODE_REDIS_6,
  NODE_REDIS_5,
  NODE_REDIS_4,
  GLIDE,
];
/** The two families' current majors (what `npm install ioredis` and `npm install redis` give). */
export const FULL: readonly ClientKind[] = [IOREDIS_6, NODE_REDIS_6];
/** The others run the conformance suite with fewer property runs. */
export const SMOKE: readonly ClientKind[] = ALL.filter((kind) => !FULL.includes(kind));
/** The failure tests (a stopped server, a paused one): each family's current major. */
export const FAILURE: readonly ClientKind[] = FULL;
