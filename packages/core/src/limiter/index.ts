export { createLimiter, Limiter } from './limiter.js';
export { checkAlgorithm, checkTimers, type CircuitChange, type LeaseDecision, type LimiterOptions, type StoreErrorEvent, type StoreErrorPolicy } from './options.js';
export { checkLimiterCost } from './cost.js';
export { parseMaxDelay, type Reservation, type ReserveOptions } from './reservation.js';
