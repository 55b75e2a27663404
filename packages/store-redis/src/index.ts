export { RedisStore, EXPLICIT_NOW_EXPIRY_MARGIN_MS, type RedisStoreOptions } from './redis-store.js';
export { hashTagOf, redisKeyBase, MAX_PLAIN_KEY_LENGTH } from './keys.js';
export { luaScripts, type LuaScript } from './lua-scripts.generated.js';
