export { fixedWindow, type FixedWindowOptions } from './algorithms/fixed-window.js';
export { slidingWindowLog, type SlidingWindowLogOptions } from './algorithms/sliding-window-log.js';
export { slidingWindowCounter, type SlidingWindowCounterOptions } from './algorithms/sliding-window-counter.js';
export { tokenBucket, type TokenBucketOptions } from './algorithms/token-bucket.js';
export { leakyBucket, type LeakyBucketOptions } from './algorithms/leaky-bucket.js';
export { concurrency, type ConcurrencyOptions } from './algorithms/concurrency.js';
export {
  checkCost,
  ALGORITHM_KINDS,
  type Algorithm,
  type AlgorithmKind,
  type NumericAlgorithm,
  type NumericState,
  type LogAlgorithm,
  type LogState,
  type ConcurrencyAlgorithm,
  type LeaseState,
  type AlgorithmCommon,
  type ScriptDescriptor,
  type ScriptConstant,
  type CompactLayout,
  type OwnKeysLayout,
} from './algorithm.js';
export { makePolicy, makeDecision, decisionFromExact, ceilMs, floorUnits, EPSILON, type Decision, type DecisionReason, type Policy } from './decision.js';
export { parseDuration, parseTimerDuration, formatDuration, MAX_TIMER_MS, type Duration, type DurationUnit } from './duration.js';
export { checkOptions } from './options.js';
export { systemClock, type Clock } from './clock.js';
export { systemTimers, type Timers, type TimerHandle } from './timers.js';
export type { Store, StoreCapabilities, MaybePromise } from './store.js';
export {
  createLimiter,
  Limiter,
  type LimiterOptions,
  type LeaseDecision,
  type StoreErrorPolicy,
  type StoreErrorEvent,
} from './limiter/index.js';
export { combineLimiters, LimiterGroup, type CombinedDecision } from './compose/group.js';
export {
  RateLimitError,
  InvalidOptionError,
  InvalidCostError,
  CostExceedsCapacityError,
  InvalidKeyError,
  UnsupportedError,
  StoreError,
  StoreTimeoutError,
  StoreClosedError,
  type RateLimitErrorCode,
} from './errors.js';
export * from './http/index.js';
