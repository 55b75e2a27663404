export {
  DurableObjectStore,
  type DurableObjectNamespaceLike,
  type DurableObjectStoreOptions,
} from './durable-object-store.js';
export { OBJECT_MAX_KEYS, RateLimitObject } from './rate-limit-object.js';
export { hashTag, shardOf } from './shards.js';
export { PROTOCOL_ERROR_CODE, WIRE_CONTENT_TYPE, type ProtocolError } from './protocol.js';
