export { RedisStore } from './redis-store.js';
export type { RedisStoreOptions } from './store-options.js';
export type { RedisClient, IoredisClient, NodeRedisClient, GlideClient } from './clients/client.js';
export { EXPLICIT_NOW_EXPIRY_MARGIN_MS } from './script-plan.js';
export {
  hashTagOf,
  redisKeyBase,
  userHashTag,
  bucketOf,
  fieldOf,
  DEFAULT_BUCKETS,
  MAX_PLAIN_KEY_LENGTH,
  MAX_PLAIN_FIELD_BYTES,
} from './keys.js';
export { luaScripts, type LuaScript } from './lua-scripts.generated.js';
