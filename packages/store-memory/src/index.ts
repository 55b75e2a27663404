export {
  MemoryStore,
  MAX_PLAIN_KEY_LENGTH,
  MEMORY_STORE_CAPABILITIES,
  type MemoryStoreOptions,
} from './memory-store.js';
