/**
 * The metrics every exporter of rl shows (`@rl/prometheus`, `@rl/opentelemetry`), declared once: an
 * exporter creates one instrument per entry of {@link INSTRUMENTS} and names it by its own rule from
 * the entry's `name`, `unit` and `kind`, so that the exporters cannot drift apart. The updates come
 * from `createMetricsModel` (metrics-model.ts).
 */
import { InvalidOptionError } from '../errors.js';

/**
 * - `counter`: only goes up, by additions (an OpenTelemetry Counter, a prom-client Counter);
 * - `histogram`: records values (seconds) into buckets;
 * - `gauge`: a count of what is there now, that goes up and down by additions and is never set (an
 *   OpenTelemetry UpDownCounter, a prom-client Gauge): two exporters or two limits of one name into
 *   one series add up, as counts do;
 * - `reading`: a value measured now (a latency, in seconds), set, never added (an OpenTelemetry
 *   Gauge, a prom-client Gauge's `set`): into one series, the last value set is what it shows, since
 *   a sum of two latencies means nothing.
 */
export type InstrumentKind = 'counter' | 'histogram' | 'gauge' | 'reading';

/** The id of each label, the key of {@link LABEL_NAMES}. */
export type LabelId =
  'limit' | 'outcome' | 'errorType' | 'circuitState' | 'leaseAction' | 'settleAction' | 'priority' | 'adaptiveOutcome';

/**
 * The one name of each label, in OpenTelemetry's form (the attribute name). An exporter that needs
 * another form derives it from this name by a rule (Prometheus: drop a leading `rl.`, `.` becomes
 * `_`: `limit`, `outcome`, `error_type`, `circuit_state`, `lease_action`, `settle_action`), so every exporter shows
 * the same labels. `error.type` is OpenTelemetry's own attribute for the class of an error. Every
 * value is bounded: a limit's name, a `DecisionOutcome`, `store-error` | `timeout`, `open` | `closed`,
 * `leased` | `returned`, `charged` | `returned`.
 */
export const LABEL_NAMES: Readonly<Record<LabelId, string>> = Object.freeze({
  limit: 'rl.limit',
  outcome: 'rl.outcome',
  errorType: 'error.type',
  circuitState: 'rl.circuit.state',
  leaseAction: 'rl.lease.action',
  settleAction: 'rl.settle.action',
  // An adaptive limit's class of work (`critical`, `normal`, `sheddable`, `share-0.7`: at most 19) and what came of it.
  priority: 'rl.priority',
  adaptiveOutcome: 'rl.adaptive.outcome',
});

/** Boundaries (seconds) of the delay histogram: from a millisecond of shaping to a minute of waiting for a reservation. */
export const DEFAULT_DELAY_BOUNDARIES: readonly number[] = Object.freeze([
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]);

/**
 * Boundaries (seconds) of the store duration histogram: from 100 µs (the memory store answers below
 * it) through the milliseconds of a Redis round trip to one second (beyond any sane store timeout).
 */
export const DEFAULT_STORE_BOUNDARIES: readonly number[] = Object.freeze([
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]);

export type InstrumentId =
  | 'decisions'
  | 'delay'
  | 'storeDuration'
  | 'storeErrors'
  | 'heldRequests'
  | 'holdsAbandoned'
  | 'reservationsCancelled'
  | 'circuitTransitions'
  | 'circuitsOpen'
  | 'leaseUnits'
  | 'settledUnits'
  | 'adaptiveLimit'
  | 'adaptiveInFlight'
  | 'adaptiveMinLatency'
  | 'adaptiveLatency'
  | 'adaptiveWork';

/** One instrument of {@link INSTRUMENTS}. */
export interface InstrumentSpec {
  readonly id: InstrumentId;
  readonly kind: InstrumentKind;
  /**
   * The name after the exporter's prefix, in OpenTelemetry's form: dotted, without the unit
   * (`store.duration`). Prometheus' name is derived from it: `.` becomes `_`, then `_seconds` for the
   * unit `s` and `_total` for a counter (`store_duration_seconds`, `store_errors_total`).
   */
  readonly name: string;
  /** UCUM unit: `s` for the histograms (values in seconds), `{decision}`-style annotations for counts. */
  readonly unit: string;
  /** The labels of every series, `limit` first; an update gives their values in this order. */
  readonly labels: readonly LabelId[];
  /** The description (OpenTelemetry) or help (Prometheus). */
  readonly description: string;
  /** For a histogram: its default boundaries, seconds, increasing (an exporter's option replaces them). */
  readonly boundaries?: readonly number[];
}

const instrument = (spec: InstrumentSpec): InstrumentSpec =>
  Object.freeze({ ...spec, labels: Object.freeze([...spec.labels]) });

/** The instruments, by id. */
export const INSTRUMENTS: Readonly<Record<InstrumentId, InstrumentSpec>> = Object.freeze({
  decisions: instrument({
    id: 'decisions',
    kind: 'counter',
    name: 'decisions',
    unit: '{decision}',
    labels: ['limit', 'outcome'],
    description:
      'Rate-limit decisions by limit and outcome (allowed, delayed, denied, dry_run_denied, failed_open, failed_closed, fallback).',
  }),
  delay: instrument({
    id: 'delay',
    kind: 'histogram',
    name: 'delay',
    unit: 's',
    labels: ['limit'],
    description: 'Delays of admitted requests that waited before they proceeded (only delays above 0), in seconds.',
    boundaries: DEFAULT_DELAY_BOUNDARIES,
  }),
  storeDuration: instrument({
    id: 'storeDuration',
    kind: 'histogram',
    name: 'store.duration',
    unit: 's',
    labels: ['limit'],
    description: 'Duration of the store calls that answered a decision, in seconds.',
    boundaries: DEFAULT_STORE_BOUNDARIES,
  }),
  storeErrors: instrument({
    id: 'storeErrors',
    kind: 'counter',
    name: 'store.errors',
    unit: '{error}',
    labels: ['limit', 'errorType'],
    description: 'Store calls that failed (store-error) or did not answer in time (timeout).',
  }),
  heldRequests: instrument({
    id: 'heldRequests',
    kind: 'gauge',
    name: 'held_requests',
    unit: '{request}',
    labels: ['limit'],
    description: 'Requests held now by the HTTP layer before they proceed (shaping, reservations).',
  }),
  holdsAbandoned: instrument({
    id: 'holdsAbandoned',
    kind: 'counter',
    name: 'holds.abandoned',
    unit: '{request}',
    labels: ['limit'],
    description: 'Held requests whose client left before they proceeded.',
  }),
  reservationsCancelled: instrument({
    id: 'reservationsCancelled',
    kind: 'counter',
    name: 'reservations.cancelled',
    unit: '{reservation}',
    labels: ['limit'],
    description:
      'Reservations cancelled before their slot (their units given back): a client that left, a denial by another limit, cancel().',
  }),
  circuitTransitions: instrument({
    id: 'circuitTransitions',
    kind: 'counter',
    name: 'circuit.transitions',
    unit: '{transition}',
    labels: ['limit', 'circuitState'],
    description: 'Store-down circuits that opened or closed, by the state entered.',
  }),
  circuitsOpen: instrument({
    id: 'circuitsOpen',
    kind: 'gauge',
    name: 'circuits.open',
    unit: '{circuit}',
    labels: ['limit'],
    description: 'Store-down circuits open now (failure domains of the store whose calls are skipped).',
  }),
  leaseUnits: instrument({
    id: 'leaseUnits',
    kind: 'counter',
    name: 'lease.units',
    unit: '{unit}',
    labels: ['limit', 'leaseAction'],
    description: 'Units of the shared quota taken by quota leases (leased) and given back unused (returned).',
  }),
  settledUnits: instrument({
    id: 'settledUnits',
    kind: 'counter',
    name: 'units.settled',
    unit: '{unit}',
    labels: ['limit', 'settleAction'],
    description:
      'Units charged (charged) or given back (returned) when a request was settled at its real cost, beyond its estimate.',
  }),
  adaptiveLimit: instrument({
    id: 'adaptiveLimit',
    kind: 'gauge',
    name: 'adaptive.limit',
    unit: '{permit}',
    labels: ['limit'],
    description: 'The permits of an adaptive concurrency limit now (min during a probe of the baseline).',
  }),
  adaptiveInFlight: instrument({
    id: 'adaptiveInFlight',
    kind: 'gauge',
    name: 'adaptive.in_flight',
    unit: '{request}',
    labels: ['limit'],
    description: 'Work holding a permit of an adaptive concurrency limit now.',
  }),
  adaptiveMinLatency: instrument({
    id: 'adaptiveMinLatency',
    kind: 'reading',
    name: 'adaptive.min_latency',
    unit: 's',
    labels: ['limit'],
    description:
      "An adaptive limit's baseline: the backend's unloaded latency as its last probe measured it, in seconds.",
  }),
  adaptiveLatency: instrument({
    id: 'adaptiveLatency',
    kind: 'reading',
    name: 'adaptive.latency',
    unit: 's',
    labels: ['limit'],
    description: "An adaptive limit's recent latency: the median of its last window of work, in seconds.",
  }),
  adaptiveWork: instrument({
    id: 'adaptiveWork',
    kind: 'counter',
    name: 'adaptive.work',
    unit: '{request}',
    labels: ['limit', 'priority', 'adaptiveOutcome'],
    description: 'Work an adaptive concurrency limit admitted, shed (refused: overload) or saw fail, by class.',
  }),
});

/**
 * Checks an exporter's boundaries option (`field`, such as `prometheusObserver.delayBuckets`): a
 * non-empty array of finite numbers of seconds, each > 0 and greater than the one before. Returns a
 * frozen copy, or `fallback` when `value` is undefined; throws {@link InvalidOptionError} naming
 * `field` otherwise.
 */
export function checkBoundaries(value: unknown, field: string, fallback: readonly number[]): readonly number[] {
  if (value === undefined) return fallback;
  const increasing =
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (bound, i) =>
        typeof bound === 'number' &&
        Number.isFinite(bound) &&
        bound > 0 &&
        (i === 0 || bound > (value[i - 1] as number)),
    );
  if (!increasing)
    throw new InvalidOptionError(
      field,
      value,
      'a non-empty array of finite numbers of seconds, each greater than 0 and than the one before',
    );
  return Object.freeze([...(value as number[])]);
}
