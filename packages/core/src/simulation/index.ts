/**
 * `@rl/core/simulation`: virtual time and the models rl's simulator runs, with no test framework
 * needed (unlike `@rl/core/testing`, whose conformance suite runs inside vitest).
 *
 * - `FakeTimers`: timers that move only when told (`advance`), for a limiter's, a middleware's or
 *   `@rl/client`'s `timers` option: timeouts, holds and waits without waiting, in a test or a script.
 * - `BackendModel` and `runOverload`: a backend of fixed capacity and service time, and a run of
 *   arrivals through a gate (none, fixed permits, an adaptive limit) into it, on a virtual clock: what
 *   `rl simulate --backend` and the adaptive limit's tests run.
 * - `MinHeap`: the priority queue they order events by.
 *
 * ```ts
 * import { FakeTimers } from '@rl/core/simulation';
 * const timers = new FakeTimers();
 * const limiter = createLimiter({ algorithm, store, timeout: 50, timers });
 * ```
 */
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
