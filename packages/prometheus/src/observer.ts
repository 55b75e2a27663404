import { DECISION_OUTCOMES, type CircuitEvent, type DecisionEvent, type HoldEvent, type Observer, type ReservationCancelledEvent, type StoreErrorObservation } from '@rl/core';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { registerMetrics, type RlMetrics } from './metrics.js';
import { parseOptions, type PrometheusObserverOptions } from './options.js';

const STORE_ERROR_KINDS: readonly StoreErrorObservation['kind'][] = ['store-error', 'timeout'];

/** An {@link Observer} that counts into prom-client metrics; `metrics` are those metrics (to read, or to `remove()` a limit's series). */
export interface PrometheusObserver extends Required<Observer> {
  readonly metrics: RlMetrics;
}

/**
 * The label children of one limit, bound once when the exporter first hears of the limit: a decision
 * then costs a Map lookup per limit and prom-client's own work, no label object or string of ours.
 */
interface LimitSeries {
  readonly decisions: Map<string, Counter.Internal>;
  readonly delay: Histogram.Internal<'limit'>;
  readonly storeDuration: Histogram.Internal<'limit'>;
  readonly storeErrors: Map<string, Counter.Internal>;
  readonly held: Gauge.Internal<'limit'>;
  readonly holdsAbandoned: Counter.Internal;
  readonly reservationsCancelled: Counter.Internal;
  readonly circuitTransitions: Map<string, Counter.Internal>;
  readonly circuitsOpen: Gauge.Internal<'limit'>;
  /** Failure domains of this limit whose circuit this exporter saw open (`''` for a store that is one domain). */
  readonly openDomains: Set<string>;
}

/**
 * Prometheus metrics of rl's limits (prom-client), as an {@link Observer}: give it as the `observer`
 * option of `createLimiter`, `combineLimiters` or a middleware, and serve `registry.metrics()`.
 *
 * - Labels are the limit's name, the outcome, the error kind, the circuit state: bounded values. The
 *   event's `key` is never read, even with `observeKeys: true`.
 * - `rl_delay_seconds` observes only delays above 0 (the `delayed` outcome), so its quantiles are the
 *   waits of the requests that waited; the share of requests that waited is in `rl_decisions_total`.
 * - At the first event of a limit, its `rl_decisions_total` series of every outcome and its
 *   `rl_store_errors_total` series of both kinds are created at 0, so `rate()` and `increase()` see
 *   the first denial or error. The other series appear at their first event.
 * - Several exporters may share one registry (and prefix): the second takes the metrics the first
 *   registered, and their counts add up. Two limits of one name count into the same series: name
 *   limits uniquely.
 *
 * Throws {@link InvalidOptionError} for bad options, and when the registry holds a metric of one of
 * these names that another exporter could not have registered (another type, labels, buckets).
 */
export function prometheusObserver(options: PrometheusObserverOptions): PrometheusObserver {
  const metrics = registerMetrics(parseOptions(options));
  const limits = new Map<string, LimitSeries>();
  const seriesOf = (limit: string): LimitSeries => limits.get(limit) ?? addLimit(limit);

  function addLimit(limit: string): LimitSeries {
    const series: LimitSeries = {
      decisions: new Map(DECISION_OUTCOMES.map((outcome) => [outcome, metrics.decisions.labels(limit, outcome)])),
      delay: metrics.delay.labels(limit),
      storeDuration: metrics.storeDuration.labels(limit),
      storeErrors: new Map(STORE_ERROR_KINDS.map((kind) => [kind, metrics.storeErrors.labels(limit, kind)])),
      held: metrics.held.labels(limit),
      holdsAbandoned: metrics.holdsAbandoned.labels(limit),
      reservationsCancelled: metrics.reservationsCancelled.labels(limit),
      circuitTransitions: new Map(),
      circuitsOpen: metrics.circuitsOpen.labels(limit),
      openDomains: new Set(),
    };
    // inc(0) creates a series at 0 and leaves one another exporter already counts in untouched.
    for (const child of series.decisions.values()) child.inc(0);
    for (const child of series.storeErrors.values()) child.inc(0);
    limits.set(limit, series);
    return series;
  }

  /** The child of a label value bound on first use (an outcome or kind a newer core adds, a circuit state). */
  function child(children: Map<string, Counter.Internal>, counter: Counter<string>, limit: string, value: string): Counter.Internal {
    let bound = children.get(value);
    if (bound === undefined) {
      bound = counter.labels(limit, value);
      children.set(value, bound);
    }
    return bound;
  }

  return {
    metrics,
    decision(event: DecisionEvent): void {
      const series = seriesOf(event.limit);
      (series.decisions.get(event.outcome) ?? child(series.decisions, metrics.decisions, event.limit, event.outcome)).inc();
      if (event.delayMs > 0) series.delay.observe(event.delayMs / 1000);
      if (event.storeMs !== undefined) series.storeDuration.observe(event.storeMs / 1000);
    },
    storeError(event: StoreErrorObservation): void {
      child(seriesOf(event.limit).storeErrors, metrics.storeErrors, event.limit, event.kind).inc();
    },
    circuit(event: CircuitEvent): void {
      const series = seriesOf(event.limit);
      child(series.circuitTransitions, metrics.circuitTransitions, event.limit, event.state).inc();
      // The gauge follows this exporter's set of open domains, so a repeated event cannot drift it,
      // and exporters sharing the registry each add only their own circuits.
      const domain = event.domain ?? '';
      if (event.state === 'open' && !series.openDomains.has(domain)) {
        series.openDomains.add(domain);
        series.circuitsOpen.inc();
      } else if (event.state === 'closed' && series.openDomains.delete(domain)) {
        series.circuitsOpen.dec();
      }
    },
    hold(event: HoldEvent): void {
      const series = seriesOf(event.limit);
      if (event.state === 'started') {
        series.held.inc();
        return;
      }
      series.held.dec();
      if (event.state === 'abandoned') series.holdsAbandoned.inc();
    },
    reservationCancelled(event: ReservationCancelledEvent): void {
      seriesOf(event.limit).reservationsCancelled.inc();
    },
  };
}
