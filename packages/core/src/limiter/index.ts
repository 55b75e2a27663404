export { createLimiter, Limiter } from './limiter.js';
export type { CircuitChange, StoreErrorEvent } from './events.js';
export type { LeaseDecision } from './lease.js';
export {
  checkMaxCost,
  checkStore,
  parseLimitName,
  type FallbackLimiter,
  type LimiterOptions,
  type StoreErrorPolicy,
} from './options.js';
export { checkLimiterCost, type ChargeOptions, type ChargedWith } from './call-input.js';
export { parseMaxDelay, type Reservation, type ReserveOptions } from './reservation.js';
export type { LeaseOptions } from './lease-options.js';
export type { BlockEvent, BlockOptions } from './block-options.js';
export type { OverrideOptions } from './overrides.js';
export { receiptOf, type ChargeReceipt } from './receipt.js';
