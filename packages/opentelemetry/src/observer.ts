import type { Attributes, Counter, Gauge, Histogram, Meter, UpDownCounter } from '@opentelemetry/api';
import {
  batchedSink,
  createMetricsModel,
  type BatchedSeries,
  INSTRUMENTS,
  LABEL_NAMES,
  LiveFlushers,
  type Flusher,
  type ExporterConfig,
  type HistogramId,
  type InstrumentId,
  type LabelId,
  type MetricsSink,
  type Observer,
} from '@rl/core';
import { parseOptions, type OpenTelemetryObserverOptions } from './options.js';

/** Attribute names: `@rl/core`'s `LABEL_NAMES`. `error.type` is OpenTelemetry's own attribute for the class of an error. */
export const ATTRIBUTES: Readonly<Record<LabelId, string>> = LABEL_NAMES;

/** The instruments of one exporter. */
export interface RlInstruments {
  /** `rl.decisions` (`{decision}`): `rl.limit`, `rl.outcome`. */
  readonly decisions: Counter;
  /** `rl.delay` (`s`): delays above 0 of admitted requests; `rl.limit`. */
  readonly delay: Histogram;
  /** `rl.store.duration` (`s`): store calls that answered a decision; `rl.limit`. */
  readonly storeDuration: Histogram;
  /** `rl.store.errors` (`{error}`): `rl.limit`, `error.type` (`store-error` | `timeout`). */
  readonly storeErrors: Counter;
  /** `rl.held_requests` (`{request}`): requests held now; `rl.limit`. */
  readonly heldRequests: UpDownCounter;
  /** `rl.holds.abandoned` (`{request}`): held requests whose client left; `rl.limit`. */
  readonly holdsAbandoned: Counter;
  /** `rl.reservations.cancelled` (`{reservation}`): reservations cancelled before their slot; `rl.limit`. */
  readonly reservationsCancelled: Counter;
  /** `rl.circuit.transitions` (`{transition}`): `rl.limit`, `rl.circuit.state` (the state entered). */
  readonly circuitTransitions: Counter;
  /** `rl.circuits.open` (`{circuit}`): store-down circuits open now; `rl.limit`. */
  readonly circuitsOpen: UpDownCounter;
}

/** An {@link Observer} that records into OpenTelemetry instruments. */
export interface OpenTelemetryObserver extends Required<Observer> {
  readonly instruments: RlInstruments;
}

/** One series: its instrument (a counter's or up-down counter's `add`, a histogram's or gauge's `record`) and its attributes, frozen. */
interface Series {
  readonly instrument: Counter & Histogram & Gauge;
  readonly attributes: Attributes;
}

const CREATE = {
  counter: 'createCounter',
  histogram: 'createHistogram',
  gauge: 'createUpDownCounter',
  reading: 'createGauge',
} as const;

/** One instrument per entry of `INSTRUMENTS`, named the prefix and the entry's name; the histograms advise their boundaries. */
function createInstruments({
  target: meter,
  prefix,
  boundaries,
}: ExporterConfig<Meter>): Record<InstrumentId, Counter & Histogram & Gauge> {
  const instruments = Object.values(INSTRUMENTS).map((spec) => {
    const advice =
      spec.kind === 'histogram'
        ? { advice: { explicitBucketBoundaries: [...boundaries[spec.id as HistogramId]] } }
        : {};
    return [
      spec.id,
      meter[CREATE[spec.kind]](prefix + spec.name, { unit: spec.unit, description: spec.description, ...advice }),
    ];
  });
  return Object.fromEntries(instruments) as Record<InstrumentId, Counter & Histogram & Gauge>;
}

/**
 * The exporters batching into each meter, each held weakly, flushed by the one batch callback the
 * meter gets (see {@link flushedAtCollection}): an exporter the app dropped is forgotten once
 * collected (a callback per exporter, which the SDK keeps for the meter's life, kept every exporter
 * made and all its series: 7.5 kB each, run at every collection).
 */
const flushersByMeter = new WeakMap<Meter, LiveFlushers>();

/**
 * `direct` batched by `@rl/core`'s `batchedSink` (a `+=` per event, not the SDK's `add`, which hashes
 * the attributes on every call), flushed by the batch callback of an observable gauge
 * (`<prefix>observer.flush`, the first exporter's prefix on the meter) that is never observed, so no
 * export shows it: the SDK runs observable callbacks before it reads the synchronous instruments, so
 * every collection is exact. One callback per meter flushes every live exporter on it. Undefined for
 * a meter without observable instruments (then every event goes to the SDK at once).
 */
function flushedAtCollection(
  { target: meter, prefix }: ExporterConfig<Meter>,
  direct: MetricsSink<Series>,
): (MetricsSink<BatchedSeries<Series>> & Flusher) | undefined {
  if (typeof meter.createObservableGauge !== 'function' || typeof meter.addBatchObservableCallback !== 'function')
    return undefined;
  const { sink, flush } = batchedSink(direct);
  // The sink is its own flusher: while the exporter holds it, so does the meter's set (weakly).
  const flushed = { ...sink, flush };
  flushersOf(meter, prefix).add(flushed);
  return flushed;
}

/** The flushers of `meter`, its batch callback registered with the set (its trigger named with `prefix`). */
function flushersOf(meter: Meter, prefix: string): LiveFlushers {
  const known = flushersByMeter.get(meter);
  if (known !== undefined) return known;
  const live = new LiveFlushers();
  flushersByMeter.set(meter, live);
  const trigger = meter.createObservableGauge(`${prefix}observer.flush`, {
    description: 'Never observed: its callback hands the counts rl batched to the instruments before a collection.',
  });
  meter.addBatchObservableCallback(() => live.flush(), [trigger]);
  return live;
}

/**
 * OpenTelemetry metrics of rl's limits, as an {@link Observer} for the `observer` option of
 * `createLimiter`, `combineLimiters` and the middlewares. The instruments of `@rl/core`'s
 * `INSTRUMENTS`, updated by its `createMetricsModel` as in `@rl/prometheus`, named by OpenTelemetry's
 * conventions: dotted names without units, the unit in `unit` (`s`, `{decision}`).
 *
 * - Attributes are bounded: `rl.limit`, `rl.outcome`, `error.type`, `rl.circuit.state`. The event's
 *   `key` is never read.
 * - `rl.delay` records only delays above 0 (the `delayed` outcome).
 * - At the first event of a limit, `rl.decisions` of every outcome and `rl.store.errors` of both
 *   types are recorded as 0, so the points exist before the first denial or error.
 * - Several exporters on one meter get the same instruments from the SDK and their values add up.
 * - Updates are batched per series and handed to the SDK when it collects (the callback of an
 *   observable gauge `<prefix>observer.flush` that never reports a value): every export is exact, and
 *   a decision does not pay the SDK's attribute hashing. `storeDurations: false` leaves
 *   `rl.store.duration` empty and saves the limiter's timing of each store call.
 */
export function openTelemetryObserver(options: OpenTelemetryObserverOptions): OpenTelemetryObserver {
  const config = parseOptions(options);
  const instruments = createInstruments(config);
  // The model asks for a series once per limit and label value: a decision allocates no attributes.
  const direct: MetricsSink<Series> = {
    series: (instrument, values) => ({
      instrument: instruments[instrument.id],
      attributes: Object.freeze(
        Object.fromEntries(instrument.labels.map((label, i) => [LABEL_NAMES[label], values[i]])),
      ),
    }),
    add: ({ instrument, attributes }, value) => instrument.add(value, attributes),
    record: ({ instrument, attributes }, value) => instrument.record(value, attributes),
    set: ({ instrument, attributes }, value) => instrument.record(value, attributes),
  };
  const modelOptions = { storeDurations: config.storeDurations };
  const flushed = flushedAtCollection(config, direct);
  return {
    instruments: instruments as RlInstruments,
    ...(flushed === undefined ? createMetricsModel(direct, modelOptions) : createMetricsModel(flushed, modelOptions)),
  };
}
