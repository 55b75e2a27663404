/**
 * `@rl/opentelemetry`: OpenTelemetry metrics of rl's limits on `@opentelemetry/api`.
 * `openTelemetryObserver({ meter })` is an `Observer` for the `observer` option of `createLimiter`,
 * `combineLimiters` and the middlewares.
 */
export { openTelemetryObserver, ATTRIBUTES, type OpenTelemetryObserver, type RlInstruments } from './observer.js';
export { DEFAULT_DELAY_BOUNDARIES, DEFAULT_STORE_BOUNDARIES, type OpenTelemetryObserverOptions } from './options.js';
