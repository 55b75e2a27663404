export { MemoryStore, MAX_PLAIN_KEY_LENGTH, type MemoryStoreOptions } from './memory-store.js';
