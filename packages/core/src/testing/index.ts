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
 * `decisionEvent` makes the event an observer hears, for testing an observer.
 */
export { runStoreConformance, type ConformanceOptions } from './conformance.js';
export { FakeTimers } from './fake-timers.js';
export { BackendModel, type BackendModelOptions } from './backend-model.js';
export { MinHeap } from './min-heap.js';
export {
  runOverload,
  type OverloadGate,
  type OverloadRunOptions,
  type OverloadStats,
  type OverloadReport,
} from './overload-run.js';
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
