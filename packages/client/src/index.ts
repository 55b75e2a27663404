export { createFetch, type FetchFunction } from './create-fetch.js';
export type { CreateFetchOptions } from './options.js';
export type { ClientObserver, RetryEvent, PacedEvent, GiveUpEvent } from './observer.js';
// The pure decisions beneath createFetch, for a simulator or another transport to drive on its own clock.
export {
  nextStep,
  serverWait,
  RETRYABLE_STATUSES,
  SAFE_METHODS,
  type RetryPolicy,
  type RetryStep,
  type StopReason,
  type AttemptOutcome,
  type AttemptState,
} from './retry-policy.js';
export { PacingBook, type PacingTicket, type Admission } from './pacing-book.js';
export { passWaiters, type GateWaiter, type GatePass } from './gate-pass.js';
export { partitionReports, type PartitionReport, type FieldSource } from './ratelimit-fields.js';
export { retryAfterMs, MAX_FIELD_SECONDS } from './retry-after.js';
