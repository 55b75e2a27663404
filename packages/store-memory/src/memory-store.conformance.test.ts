import { runStoreConformance } from '@rl/core/testing';
import { MemoryStore } from './memory-store.js';

runStoreConformance({ name: 'MemoryStore', createStore: () => new MemoryStore() });
