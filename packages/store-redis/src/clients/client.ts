import { InvalidOptionError } from '@rl/core/store';
import type { ClientAdapter } from './adapter.js';
import { glideAdapter, isGlideLike, type GlideClient } from './glide.js';
import { ioredisAdapter, isIoredisLike, type IoredisClient } from './ioredis.js';
import { isNodeRedisLike, nodeRedisAdapter, type NodeRedisClient } from './node-redis.js';

export type { IoredisClient } from './ioredis.js';
export type { NodeRedisClient } from './node-redis.js';
export type { GlideClient } from './glide.js';
export type { ClientAdapter } from './adapter.js';

/**
 * A client the store can use: ioredis 5 or 6 and iovalkey (`Redis`, `Cluster`), or node-redis 4 and
 * later (`createClient`, `createCluster`, and from 5 on `createClientPool`), or Valkey GLIDE 2
 * (`GlideClient.createClient`, `GlideClusterClient.createClient`). The
 * store tells them apart by their methods; it never opens, closes or reconfigures the client.
 */
export type RedisClient = IoredisClient | NodeRedisClient | GlideClient;

/** What a {@link RedisStoreOptions.client} must be, for the error that refuses anything else. */
const ACCEPTED =
  'a Redis client: ioredis 5 or 6 or iovalkey (new Redis(url), new Cluster(nodes)), or node-redis 4 or later (createClient({ url }), createCluster({ rootNodes }), then await client.connect()), or Valkey GLIDE 2 (await GlideClient.createClient({ addresses }), await GlideClusterClient.createClient({ addresses }))';

/** The adapter of the client's family; throws {@link InvalidOptionError} naming what is accepted for anything else. */
export function adaptClient(client: unknown): ClientAdapter {
  if (client !== null && typeof client === 'object') {
    if (isIoredisLike(client)) return ioredisAdapter(client);
    if (isNodeRedisLike(client)) return nodeRedisAdapter(client);
    if (isGlideLike(client)) return glideAdapter(client);
  }
  throw new InvalidOptionError('RedisStore.client', client, ACCEPTED);
}
