/**
 * `@rl/prometheus`: Prometheus metrics of rl's limits on prom-client. `prometheusObserver({ registry })`
 * is an `Observer` for the `observer` option of `createLimiter`, `combineLimiters` and the middlewares.
 */
export { prometheusObserver, type PrometheusObserver } from './observer.js';
export { DEFAULT_DELAY_BUCKETS, DEFAULT_STORE_BUCKETS, type PrometheusObserverOptions } from './options.js';
export type { RlMetrics } from './metrics.js';
