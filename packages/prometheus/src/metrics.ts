import {
  INSTRUMENTS,
  InvalidOptionError,
  LABEL_NAMES,
  type ExporterConfig,
  type HistogramId,
  type InstrumentId,
  type InstrumentSpec,
  type LabelId,
} from '@rl/core';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The prom-client metrics of one exporter (shared with every other exporter on the same registry and prefix). */
export interface RlMetrics {
  /** `rl_decisions_total{limit, outcome}`. */
  readonly decisions: Counter<'limit' | 'outcome'>;
  /** `rl_delay_seconds{limit}`. */
  readonly delay: Histogram<'limit'>;
  /** `rl_store_duration_seconds{limit}`. */
  readonly storeDuration: Histogram<'limit'>;
  /** `rl_store_errors_total{limit, error_type}`. */
  readonly storeErrors: Counter<'limit' | 'error_type'>;
  /** `rl_held_requests{limit}`. */
  readonly held: Gauge<'limit'>;
  /** `rl_holds_abandoned_total{limit}`. */
  readonly holdsAbandoned: Counter<'limit'>;
  /** `rl_reservations_cancelled_total{limit}`. */
  readonly reservationsCancelled: Counter<'limit'>;
  /** `rl_circuit_transitions_total{limit, circuit_state}`. */
  readonly circuitTransitions: Counter<'limit' | 'circuit_state'>;
  /** `rl_circuits_open{limit}`. */
  readonly circuitsOpen: Gauge<'limit'>;
}

type Metric = Counter<string> | Gauge<string> | Histogram<string>;
const CLASSES = { counter: Counter, histogram: Histogram, gauge: Gauge, reading: Gauge };

/** A label's Prometheus name, from the table's one name: a leading `rl.` dropped, `.` made `_` (`error.type` → `error_type`). */
const labelName = (label: LabelId): string => LABEL_NAMES[label].replace(/^rl\./, '').replace(/\./g, '_');

/** A metric's name: the prefix, the table's name with `_` for `.`, then `_seconds` for the unit `s`, `_total` for a counter. */
const metricName = (spec: InstrumentSpec, prefix: string): string =>
  prefix +
  spec.name.replace(/\./g, '_') +
  (spec.unit === 's' ? '_seconds' : '') +
  (spec.kind === 'counter' ? '_total' : '');

/**
 * Registers the metrics of `INSTRUMENTS` on the registry, or takes the ones an earlier exporter
 * registered there under the same names (two middlewares, one exporter each, one `/metrics`):
 * prom-client throws on a second registration of a name. A metric of that name that is not what this
 * exporter would register (another type, other labels, other buckets) is an {@link InvalidOptionError}:
 * counting into it would mix series.
 */
export function registerMetrics(config: ExporterConfig<Registry>): Record<InstrumentId, Metric> {
  return Object.fromEntries(Object.values(INSTRUMENTS).map((spec) => [spec.id, metric(config, spec)])) as Record<
    InstrumentId,
    Metric
  >;
}

function metric({ target: registry, prefix, boundaries }: ExporterConfig<Registry>, spec: InstrumentSpec): Metric {
  const name = metricName(spec, prefix);
  const type = CLASSES[spec.kind];
  const labelNames = spec.labels.map(labelName);
  const buckets = spec.kind === 'histogram' ? boundaries[spec.id as HistogramId] : undefined;
  const existing = registry.getSingleMetric(name);
  if (existing === undefined)
    return new type({
      name,
      help: spec.description,
      labelNames,
      registers: [registry],
      ...(buckets ? { buckets: [...buckets] } : {}),
    });
  const mismatch = differs(existing, type, labelNames, buckets);
  if (mismatch) {
    throw new InvalidOptionError(
      'prometheusObserver.registry',
      name,
      `a registry where ${name} is free or was registered by another rl exporter; it already holds a ${name} with ${mismatch}. Give every exporter on one registry the same buckets, share one exporter, or choose another prefix`,
    );
  }
  return existing as Metric;
}

/** What makes an existing metric unusable for this exporter, or undefined when it is the same metric. */
function differs(
  existing: unknown,
  type: (typeof CLASSES)[keyof typeof CLASSES],
  labelNames: readonly string[],
  buckets: readonly number[] | undefined,
): string | undefined {
  if (!(existing instanceof type)) return `another type (this exporter needs a ${type.name})`;
  // Runtime fields of prom-client's metrics (not in its typings): compared when present.
  const { labelNames: labels, upperBounds } = existing as unknown as {
    labelNames?: readonly string[];
    upperBounds?: readonly number[];
  };
  if (labels !== undefined && !sameList(labels, labelNames))
    return `labels [${labels.join(', ')}] (this exporter needs [${labelNames.join(', ')}])`;
  if (buckets !== undefined && upperBounds !== undefined && !sameList(upperBounds, buckets))
    return `buckets [${upperBounds.join(', ')}] (this exporter was given [${buckets.join(', ')}])`;
  return undefined;
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
