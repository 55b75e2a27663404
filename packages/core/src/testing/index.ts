/**
 * `@rl/core/testing`: the conformance suite every store runs, and the scenario tables behind it.
 *
 * ```ts
 * import { runStoreConformance } from '@rl/core/testing';
 * runStoreConformance({ name: 'MyStore', createStore: () => new MyStore() });
 * ```
 */
export { runStoreConformance, type ConformanceOptions } from './conformance.js';
export { FakeTimers } from './fake-timers.js';
export { runScenario, checkScenario, type StepResult } from './run-scenario.js';
export {
  scenarios,
  seedScenarios,
  costScenarios,
  timingScenarios,
  edgeScenarios,
  clockScenarios,
  stateScenarios,
  configChangeScenarios,
  concurrencyScenarios,
  type Scenario,
  type ScenarioStep,
  type ExpectedDecision,
} from './scenarios.js';
