/**
 * `@rl/core/testing`: the conformance suite every store runs, and the scenario tables behind it.
 *
 * ```ts
 * import { runStoreConformance } from '@rl/core/testing';
 * runStoreConformance({ name: 'MyStore', createStore: () => new MyStore() });
 * ```
 *
 * `StepStore` is the reference store the suite runs on in core: the smallest store that passes.
 * `TestStore` is a store a test drives: it records its calls, answers synchronously, with a promise or
 * only when the test says so, and fails while told to, for testing timeouts and failures.
 * `decisionEvent` makes the event an observer hears, for testing an observer. This entry runs inside
 * vitest (an optional peer of `@rl/core`); `FakeTimers`, `BackendModel`, `runOverload` and `MinHeap`,
 * re-exported here, come without it from `@rl/core/simulation`.
 */
export { runStoreConformance, type ConformanceOptions } from './conformance.js';
// Virtual time and the simulator's models, here too for the tests that import them from this entry.
export * from '../simulation/index.js';
export { rejection } from './capture.js';
export { decisionEvent } from '../observe/decision-event.js';
export { StepStore, type StepStoreOptions } from './step-store.js';
export { TestStore, type TestStoreAnswers, type TestStoreOptions } from './test-store.js';
export { runScenario, checkScenario, type StepResult } from './run-scenario.js';
export type { Admission, Arrival, Bound } from './bounds.js';
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
  giveBackScenarios,
  lockoutScenarios,
  kindSuites,
  type Configuration,
  type DrawnOptions,
  type KindSuite,
  type LoadTestRow,
  type Sample,
  type Scenario,
  type ScenarioGroup,
  type ScenarioStep,
  type ExpectedDecision,
} from './scenarios.js';
