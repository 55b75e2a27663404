export { createLimiter, Limiter } from './limiter.js';
export type { CircuitChange, StoreErrorEvent } from './events.js';
export type { LeaseDecision } from './lease.js';
export { checkMaxCost, checkStore, parseLimitName, type FallbackLimiter, type LimiterOptions, type StoreErrorPolicy } from './options.js';
export { checkLimiterCost, type ChargeOptions } from './call-input.js';
export { parseMaxDelay, type Reservation, type ReserveOptions } from './reservation.js';
export type { LeaseOptions } from './lease-options.js';
export type { BlockEvent, BlockOptions, OverrideOptions } from './key-verbs.js';
