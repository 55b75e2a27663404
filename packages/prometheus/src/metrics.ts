import { InvalidOptionError } from '@rl/core';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PrometheusConfig } from './options.js';

/** The prom-client metrics of one exporter (shared with every other exporter on the same registry and prefix). */
export interface RlMetrics {
  /** `rl_decisions_total{limit, outcome}`. */
  readonly decisions: Counter<'limit' | 'outcome'>;
  /** `rl_delay_seconds{limit}`. */
  readonly delay: Histogram<'limit'>;
  /** `rl_store_duration_seconds{limit}`. */
  readonly storeDuration: Histogram<'limit'>;
  /** `rl_store_errors_total{limit, kind}`. */
  readonly storeErrors: Counter<'limit' | 'kind'>;
  /** `rl_held_requests{limit}`. */
  readonly held: Gauge<'limit'>;
  /** `rl_holds_abandoned_total{limit}`. */
  readonly holdsAbandoned: Counter<'limit'>;
  /** `rl_reservations_cancelled_total{limit}`. */
  readonly reservationsCancelled: Counter<'limit'>;
  /** `rl_circuit_transitions_total{limit, state}`. */
  readonly circuitTransitions: Counter<'limit' | 'state'>;
  /** `rl_circuits_open{limit}`. */
  readonly circuitsOpen: Gauge<'limit'>;
}

/**
 * Registers the metrics on the registry, or takes the ones an earlier exporter registered there under
 * the same names (two middlewares, one exporter each, one `/metrics`): prom-client throws on a second
 * registration of a name. A metric of that name that is not what this exporter would register (another
 * type, other labels, other buckets) is an {@link InvalidOptionError}: counting into it would mix series.
 */
export function registerMetrics(config: PrometheusConfig): RlMetrics {
  const { registry, prefix } = config;
  const on = { registry, prefix };
  return {
    decisions: metric(on, Counter, 'decisions_total', 'Rate-limit decisions by limit and outcome (allowed, delayed, denied, dry_run_denied, failed_open, failed_closed, fallback).', ['limit', 'outcome']),
    delay: metric(on, Histogram, 'delay_seconds', 'Delays of admitted requests that waited before they proceeded (only delays above 0), in seconds.', ['limit'], config.delayBuckets),
    storeDuration: metric(on, Histogram, 'store_duration_seconds', 'Duration of the store calls that answered a decision, in seconds.', ['limit'], config.storeBuckets),
    storeErrors: metric(on, Counter, 'store_errors_total', 'Store calls that failed (store-error) or did not answer in time (timeout).', ['limit', 'kind']),
    held: metric(on, Gauge, 'held_requests', 'Requests held now by the HTTP layer before they proceed (shaping, reservations).', ['limit']),
    holdsAbandoned: metric(on, Counter, 'holds_abandoned_total', 'Held requests whose client left before they proceeded.', ['limit']),
    reservationsCancelled: metric(on, Counter, 'reservations_cancelled_total', 'Reservations cancelled before their slot (their units given back): a client that left, a denial by another limit, cancel().', ['limit']),
    circuitTransitions: metric(on, Counter, 'circuit_transitions_total', 'Store-down circuits that opened or closed, by the state entered.', ['limit', 'state']),
    circuitsOpen: metric(on, Gauge, 'circuits_open', 'Store-down circuits open now (failure domains of the store whose calls are skipped).', ['limit']),
  };
}

type MetricClass = typeof Counter | typeof Gauge | typeof Histogram;

function metric<C extends MetricClass>(
  on: { registry: Registry; prefix: string },
  type: C,
  suffix: string,
  help: string,
  labelNames: readonly string[],
  buckets?: readonly number[],
): InstanceType<C> {
  const name = on.prefix + suffix;
  const existing = on.registry.getSingleMetric(name);
  if (existing === undefined) {
    const config = { name, help, labelNames, registers: [on.registry], ...(buckets ? { buckets: [...buckets] } : {}) };
    return new type(config as never) as InstanceType<C>;
  }
  const mismatch = differs(existing, type, labelNames, buckets);
  if (mismatch) {
    throw new InvalidOptionError(
      'prometheusObserver.registry',
      name,
      `a registry where ${name} is free or was registered by another rl exporter; it already holds a ${name} with ${mismatch}. Give every exporter on one registry the same buckets, share one exporter, or choose another prefix`,
    );
  }
  return existing as InstanceType<C>;
}

/** What makes an existing metric unusable for this exporter, or undefined when it is the same metric. */
function differs(existing: unknown, type: MetricClass, labelNames: readonly string[], buckets: readonly number[] | undefined): string | undefined {
  if (!(existing instanceof type)) return `another type (this exporter needs a ${type.name})`;
  // Runtime fields of prom-client's metrics (not in its typings): compared when present.
  const { labelNames: labels, upperBounds } = existing as unknown as { labelNames?: readonly string[]; upperBounds?: readonly number[] };
  if (labels !== undefined && !sameList(labels, labelNames)) return `labels [${labels.join(', ')}] (this exporter needs [${labelNames.join(', ')}])`;
  if (buckets !== undefined && upperBounds !== undefined && !sameList(upperBounds, buckets)) return `buckets [${upperBounds.join(', ')}] (this exporter was given [${buckets.join(', ')}])`;
  return undefined;
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
