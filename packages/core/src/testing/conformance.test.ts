import { runStoreConformance } from './conformance.js';
import { StepStore } from './step-store.js';

runStoreConformance({ name: 'StepStore', createStore: () => new StepStore() });
