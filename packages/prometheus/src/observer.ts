import { createMetricsModel, type MetricsSink, type Observer } from '@rl/core';
import type { Counter } from 'prom-client';
import { collectedSink, type Child } from './collected-sink.js';
import { registerMetrics, type RlMetrics } from './metrics.js';
import { parseOptions, type PrometheusObserverOptions } from './options.js';

/** An {@link Observer} that counts into prom-client metrics; `metrics` are those metrics (to read, or to `remove()` a limit's series). */
export interface PrometheusObserver extends Required<Observer> {
  readonly metrics: RlMetrics;
}

/**
 * Prometheus metrics of rl's limits (prom-client), as an {@link Observer}: give it as the `observer`
 * option of `createLimiter`, `combineLimiters` or a middleware, and serve `registry.metrics()`. What
 * is counted is `@rl/core`'s `createMetricsModel`, on the instruments of its `INSTRUMENTS`.
 *
 * - Labels are `limit`, `outcome`, `error_type`, `circuit_state` (the names of `@rl/opentelemetry`'s
 *   attributes, without `rl.` and with `_`): bounded values. The event's `key` is never read.
 * - `rl_delay_seconds` observes only delays above 0 (the `delayed` outcome), so its quantiles are the
 *   waits of the requests that waited; the share of requests that waited is in `rl_decisions_total`.
 * - `storeDurations: false` leaves `rl_store_duration_seconds` empty, and the limiter then times no
 *   store call for this observer.
 * - Counts are summed, and histogram values kept (up to 256 per series), per series in the exporter,
 *   and handed to prom-client when the registry collects (a scrape, `metric.get()`): what a scrape
 *   shows is exact; prom-client's own `inc` and `observe` are not called per decision.
 * - At the first event of a limit, its `rl_decisions_total` series of every outcome and its
 *   `rl_store_errors_total` series of both error types are created at 0, so `rate()` and
 *   `increase()` see the first denial or error. The other series appear at their first event.
 * - Several exporters may share one registry (and prefix): the second takes the metrics the first
 *   registered, and their counts add up. Two limits of one name count into the same series: name
 *   limits uniquely.
 *
 * Throws {@link InvalidOptionError} for bad options, and when the registry holds a metric of one of
 * these names that another exporter could not have registered (another type, labels, buckets).
 */
export function prometheusObserver(options: PrometheusObserverOptions): PrometheusObserver {
  const config = parseOptions(options);
  const byId = registerMetrics(config);
  // The model binds a child once per limit and label value: a decision then builds no label object or string.
  const direct: MetricsSink<Child> = {
    series: (instrument, values) => (byId[instrument.id] as Counter<string>).labels(...values) as Child,
    add: (child, value) => child.inc(value),
    record: (child, value) => child.observe(value),
    set: (child, value) => child.set(value),
  };
  const sink = collectedSink(direct, Object.values(byId));
  const { heldRequests: held, ...metrics } = byId;
  return {
    metrics: { ...metrics, held } as unknown as RlMetrics,
    ...createMetricsModel(sink, { storeDurations: config.storeDurations }),
  };
}
