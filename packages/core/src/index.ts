// `@rl/core`: what applications call. Adapter authors find the HTTP layer's kit under `@rl/core/http`,
// store authors the store interface's helpers under `@rl/core/store`, and everyone the conformance
// suite under `@rl/core/testing`.
export { fixedWindow, type FixedWindowOptions } from './algorithms/fixed-window.js';
export {
  calendarWindow,
  type CalendarPeriod,
  type CalendarWindowOptions,
  type Weekday,
} from './algorithms/calendar-window.js';
export { slidingWindowLog, type SlidingWindowLogOptions } from './algorithms/sliding-window-log.js';
export { slidingWindowCounter, type SlidingWindowCounterOptions } from './algorithms/sliding-window-counter.js';
export { tokenBucket, type TokenBucketOptions } from './algorithms/token-bucket.js';
export { leakyBucket, type LeakyBucketOptions } from './algorithms/leaky-bucket.js';
export { concurrency, type ConcurrencyOptions } from './algorithms/concurrency.js';
export { withBlock } from './algorithms/block.js';
export {
  adaptiveConcurrency,
  AdaptiveConcurrency,
  type AdaptivePermit,
  type AdaptiveSnapshot,
  type AdaptiveClassCounts,
} from './adaptive/adaptive-concurrency.js';
export type { AdaptiveConcurrencyOptions } from './adaptive/options.js';
export {
  gradientController,
  aimdController,
  type LimitController,
  type LatencyWindow,
  type WindowConcurrency,
  type GradientOptions,
  type AimdOptions,
} from './adaptive/controller.js';
export type { Priority, PriorityClass, PriorityShares } from './adaptive/priority.js';
export { ALGORITHM_FACTORIES } from './algorithms/index.js';
export type { Algorithm, AlgorithmKind, Settlement } from './algorithm.js';
export type { Decision, DecisionReason, Policy } from './decision.js';
export { parseDuration, formatDuration, type Duration, type DurationUnit } from './duration.js';
export { systemClock, type Clock } from './clock.js';
export { systemTimers, type Timers, type TimerHandle } from './timers.js';
export type { Store, StoreCapabilities, MaybePromise, StoredOverride } from './store/interface.js';
export {
  createLimiter,
  Limiter,
  type LimiterOptions,
  type LeaseOptions,
  type LeaseDecision,
  type Reservation,
  type ReserveOptions,
  type BlockEvent,
  type BlockOptions,
  type OverrideOptions,
  type ChargeOptions,
  type ChargedWith,
  type StoreErrorPolicy,
  type FallbackLimiter,
  type StoreErrorEvent,
  type CircuitChange,
  receiptOf,
  type ChargeReceipt,
} from './limiter/index.js';
export { combineLimiters, LimiterGroup, type CombinedDecision } from './compose/group.js';
export {
  RateLimitError,
  InvalidOptionError,
  InvalidCostError,
  CostExceedsCapacityError,
  InvalidKeyError,
  InvalidAlgorithmError,
  UnsupportedError,
  StoreError,
  StoreTimeoutError,
  StoreClosedError,
  ResetUnconfirmedError,
  type RateLimitErrorCode,
} from './errors.js';
// What an application's handlers and key functions use from the HTTP layer; the rest of it is for adapters (`@rl/core/http`).
export type { RateLimitResult } from './http/result.js';
export type * from './http/application-types.js';
export type { HeaderFormat } from './http/headers.js';
export { ipKey, DEFAULT_IPV6_SUBNET } from './http/keys.js';
export {
  DECISION_OUTCOMES,
  type Observer,
  type DecisionEvent,
  type DecisionOutcome,
  type StoreErrorObservation,
  type CircuitEvent,
  type HoldEvent,
  type ReservationCancelledEvent,
  type LeaseUnitsEvent,
  type SettledEvent,
  type AdaptiveConcurrencyEvent,
} from './observe/observer.js';
// For metrics exporters: the one table of rl's instruments, and the model that turns observer events into their updates.
export {
  INSTRUMENTS,
  LABEL_NAMES,
  DEFAULT_DELAY_BOUNDARIES,
  DEFAULT_STORE_BOUNDARIES,
  checkBoundaries,
  type InstrumentId,
  type InstrumentKind,
  type InstrumentSpec,
  type LabelId,
} from './observe/instruments.js';
export { createMetricsModel, type MetricsModelOptions, type MetricsSink } from './observe/metrics-model.js';
export {
  batchedSink,
  HISTOGRAM_BUFFER,
  LiveFlushers,
  type BatchedSeries,
  type BatchedSink,
  type Flusher,
} from './observe/batched-sink.js';
export {
  parseExporterOptions,
  type ExporterOptionSpec,
  type CommonExporterOptions,
  type ExporterConfig,
  type HistogramId,
} from './observe/exporter-options.js';
