/**
 * What rl's metrics count, once for every exporter: {@link createMetricsModel} turns the events of an
 * {@link Observer} into updates of the instruments of {@link INSTRUMENTS}, on a {@link MetricsSink}
 * that an exporter implements on its metrics library.
 */
import { INSTRUMENTS, type InstrumentSpec } from './instruments.js';
import { adaptiveMetrics } from './adaptive-metrics.js';
import {
  DECISION_OUTCOMES,
  type CircuitEvent,
  type DecisionEvent,
  type HoldEvent,
  type LeaseUnitsEvent,
  type SettledEvent,
  type Observer,
  type ReservationCancelledEvent,
  type StoreErrorObservation,
} from './observer.js';

/**
 * An exporter's side of {@link createMetricsModel}. `S` is the exporter's handle of one series (one
 * instrument with one set of label values): a prom-client label child, an OpenTelemetry instrument
 * with its frozen attributes.
 */
export interface MetricsSink<S> {
  /**
   * The series of `instrument` with `labelValues`, given in the order of `instrument.labels`. Called
   * once per limit and label value: the model keeps the handle for every later update, so whatever
   * the exporter builds here (a label object) is built once. Need not create the series: the model's
   * first `add` or `record` does.
   */
  series(instrument: InstrumentSpec, labelValues: readonly string[]): S;
  /** Adds `value` to a counter (0, which creates the series at 0 and changes no count already in it, or more: 1, a lease's units) or to a gauge (1 or -1). */
  add(series: S, value: number): void;
  /** Records `value` (seconds, above 0 for the delay, 0 or more for the store duration) into a histogram. */
  record(series: S, value: number): void;
  /** Sets a reading to `value` (seconds, 0 or more: an adaptive limit's latencies): the series shows the last value set. */
  set(series: S, value: number): void;
}

/** How {@link createMetricsModel} measures. */
export interface MetricsModelOptions {
  /**
   * Record `storeDuration` (default true). `false`: the model's observer says so
   * (`Observer.storeDurations`), so the limiter times no store call for it, and the histogram stays
   * empty.
   */
  readonly storeDurations?: boolean;
}

/** Both values of `error.type`: recorded at 0 at a limit's first event, beside every decision outcome. */
const STORE_ERROR_KINDS: readonly StoreErrorObservation['kind'][] = ['store-error', 'timeout'];

/** The series of one limit, bound when the model first hears of the limit (those with a second label: on first use of its value). */
interface LimitSeries<S> {
  readonly limit: string;
  readonly decisions: Map<string, S>;
  readonly delay: S;
  readonly storeDuration: S;
  readonly storeErrors: Map<string, S>;
  readonly heldRequests: S;
  readonly holdsAbandoned: S;
  readonly reservationsCancelled: S;
  readonly circuitTransitions: Map<string, S>;
  readonly circuitsOpen: S;
  readonly leaseUnits: Map<string, S>;
  readonly settledUnits: Map<string, S>;
  /** Failure domains of this limit whose circuit this model saw open (`''` for a store that is one domain). */
  readonly openDomains: Set<string>;
}

/**
 * An {@link Observer} that updates the instruments of {@link INSTRUMENTS} through `sink` (instruments
 * and labels named here by their ids):
 *
 * - `decisions{limit, outcome}` +1 per decision; `delay{limit}` records `delayMs / 1000` when it is
 *   above 0 (only the requests that waited); `storeDuration{limit}` records `storeMs / 1000` when the
 *   store answered.
 * - `storeErrors{limit, errorType}` +1 per store error, `errorType` being the event's `kind`.
 * - `circuitTransitions{limit, circuitState}` +1 per circuit event. `circuitsOpen{limit}` follows the
 *   set of failure domains this model saw open (domain undefined is `''`): +1 when a domain opens, -1
 *   when an open one closes, nothing for a repeated `open` or a `closed` of a domain not open. So a
 *   repeated event cannot drift the gauge, and exporters sharing one registry each add only their own
 *   circuits.
 * - `heldRequests{limit}` +1 per hold `started`, -1 per `ended` or `abandoned`; `holdsAbandoned{limit}`
 *   +1 per `abandoned`; `reservationsCancelled{limit}` +1 per event; `leaseUnits{limit, leaseAction}`
 *   + the event's `units`, `leaseAction` being its `action`; `settledUnits{limit, settleAction}` + the
 *   event's `units`, `settleAction` being its `action`.
 * - At the first event of a limit, of any kind, its `decisions` of every outcome of
 *   `DECISION_OUTCOMES` and its `storeErrors` of both types are added 0, so that they exist before
 *   the first denial or error (`rate()` sees it). An outcome or type a newer core adds is counted
 *   under its own value from its first event.
 * - An adaptive limit's events (`adaptive`): see `adaptiveMetrics`.
 * - The event's `key` is never read. A decision allocates nothing of the model's: two Map lookups
 *   and the sink's calls on handles made once per limit and value.
 */
export function createMetricsModel<S>(sink: MetricsSink<S>, options: MetricsModelOptions = {}): Required<Observer> {
  const limits = new Map<string, LimitSeries<S>>();
  const seriesOf = (limit: string): LimitSeries<S> => limits.get(limit) ?? addLimit(limit);

  function addLimit(limit: string): LimitSeries<S> {
    const labels = Object.freeze([limit]);
    const entry: LimitSeries<S> = {
      limit,
      decisions: new Map(),
      delay: sink.series(INSTRUMENTS.delay, labels),
      storeDuration: sink.series(INSTRUMENTS.storeDuration, labels),
      storeErrors: new Map(),
      heldRequests: sink.series(INSTRUMENTS.heldRequests, labels),
      holdsAbandoned: sink.series(INSTRUMENTS.holdsAbandoned, labels),
      reservationsCancelled: sink.series(INSTRUMENTS.reservationsCancelled, labels),
      circuitTransitions: new Map(),
      circuitsOpen: sink.series(INSTRUMENTS.circuitsOpen, labels),
      leaseUnits: new Map(),
      settledUnits: new Map(),
      openDomains: new Set(),
    };
    limits.set(limit, entry);
    for (const outcome of DECISION_OUTCOMES)
      sink.add(withValue(entry, entry.decisions, INSTRUMENTS.decisions, outcome), 0);
    for (const kind of STORE_ERROR_KINDS)
      sink.add(withValue(entry, entry.storeErrors, INSTRUMENTS.storeErrors, kind), 0);
    return entry;
  }

  /** The limit's series of `instrument` whose second label is `value`, bound on first use and kept. */
  function withValue(entry: LimitSeries<S>, bound: Map<string, S>, instrument: InstrumentSpec, value: string): S {
    let series = bound.get(value);
    if (series === undefined) {
      series = sink.series(instrument, Object.freeze([entry.limit, value]));
      bound.set(value, series);
    }
    return series;
  }

  return {
    storeDurations: options.storeDurations !== false,
    decision(event: DecisionEvent): void {
      const entry = seriesOf(event.limit);
      sink.add(
        entry.decisions.get(event.outcome) ?? withValue(entry, entry.decisions, INSTRUMENTS.decisions, event.outcome),
        1,
      );
      if (event.delayMs > 0) sink.record(entry.delay, event.delayMs / 1000);
      if (event.storeMs !== undefined) sink.record(entry.storeDuration, event.storeMs / 1000);
    },
    storeError(event: StoreErrorObservation): void {
      const entry = seriesOf(event.limit);
      sink.add(withValue(entry, entry.storeErrors, INSTRUMENTS.storeErrors, event.kind), 1);
    },
    circuit(event: CircuitEvent): void {
      const entry = seriesOf(event.limit);
      sink.add(withValue(entry, entry.circuitTransitions, INSTRUMENTS.circuitTransitions, event.state), 1);
      const domain = event.domain ?? '';
      if (event.state === 'open' && !entry.openDomains.has(domain)) {
        entry.openDomains.add(domain);
        sink.add(entry.circuitsOpen, 1);
      } else if (event.state === 'closed' && entry.openDomains.delete(domain)) {
        sink.add(entry.circuitsOpen, -1);
      }
    },
    hold(event: HoldEvent): void {
      const entry = seriesOf(event.limit);
      sink.add(entry.heldRequests, event.state === 'started' ? 1 : -1);
      if (event.state === 'abandoned') sink.add(entry.holdsAbandoned, 1);
    },
    reservationCancelled(event: ReservationCancelledEvent): void {
      sink.add(seriesOf(event.limit).reservationsCancelled, 1);
    },
    leaseUnits(event: LeaseUnitsEvent): void {
      const entry = seriesOf(event.limit);
      sink.add(withValue(entry, entry.leaseUnits, INSTRUMENTS.leaseUnits, event.action), event.units);
    },
    settled(event: SettledEvent): void {
      const entry = seriesOf(event.limit);
      sink.add(withValue(entry, entry.settledUnits, INSTRUMENTS.settledUnits, event.action), event.units);
    },
    adaptive: adaptiveMetrics(sink),
  };
}
