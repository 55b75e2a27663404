export {
  DurableObjectStore,
  type DurableObjectNamespaceLike,
  type DurableObjectStoreOptions,
} from './durable-object-store.js';
export { RateLimitObject } from './rate-limit-object.js';
export { hashTag, shardOf } from './shards.js';
export { PROTOCOL_ERROR_CODE, WIRE_CONTENT_TYPE, type ProtocolError } from './protocol.js';
