import { INSTRUMENTS, type InstrumentSpec } from './instruments.js';
import type { AdaptiveConcurrencyEvent } from './observer.js';

/** What of an exporter's `MetricsSink` the adaptive metrics use. */
interface AdaptiveSink<S> {
  series(instrument: InstrumentSpec, labelValues: readonly string[]): S;
  add(series: S, value: number): void;
  set(series: S, value: number): void;
}

/** The series of one adaptive limit, and the values this model last showed in them (a gauge is only added to; a reading is set when its value changes). */
interface AdaptiveSeries<S> {
  readonly limit: S;
  readonly inFlight: S;
  readonly minLatency: S;
  readonly latency: S;
  /** `adaptiveWork` by `<priority> <outcome>`. */
  readonly work: Map<string, S>;
  shown: { permits: number; inFlight: number; minLatency: number; latency: number };
}

/**
 * The metrics model's handler of adaptive concurrency events: the gauges `adaptiveLimit` and
 * `adaptiveInFlight` follow the event's state (each update adds the difference from what this model
 * showed: an exporter's gauges are only added to, so two limits of one name add up), the readings
 * `adaptiveMinLatency` and `adaptiveLatency` are set to the event's latencies when they change;
 * `adaptiveWork{limit, priority, adaptiveOutcome}` +1 per `admitted`, `shed` or `failed`.
 */
export function adaptiveMetrics<S>(sink: AdaptiveSink<S>): (event: AdaptiveConcurrencyEvent) => void {
  const limits = new Map<string, AdaptiveSeries<S>>();
  const seriesOf = (name: string): AdaptiveSeries<S> => {
    let entry = limits.get(name);
    if (entry === undefined) {
      const labels = Object.freeze([name]);
      entry = {
        limit: sink.series(INSTRUMENTS.adaptiveLimit, labels),
        inFlight: sink.series(INSTRUMENTS.adaptiveInFlight, labels),
        minLatency: sink.series(INSTRUMENTS.adaptiveMinLatency, labels),
        latency: sink.series(INSTRUMENTS.adaptiveLatency, labels),
        work: new Map(),
        shown: { permits: 0, inFlight: 0, minLatency: 0, latency: 0 },
      };
      limits.set(name, entry);
    }
    return entry;
  };
  const bring = (series: S, from: number, to: number): number => {
    if (to !== from) sink.add(series, to - from);
    return to;
  };
  const read = (series: S, from: number, to: number): number => {
    if (to !== from) sink.set(series, to);
    return to;
  };
  return (event) => {
    const entry = seriesOf(event.limit);
    const shown = entry.shown;
    shown.permits = bring(entry.limit, shown.permits, event.permits);
    shown.inFlight = bring(entry.inFlight, shown.inFlight, event.inFlight);
    if (event.minLatencyMs !== undefined)
      shown.minLatency = read(entry.minLatency, shown.minLatency, event.minLatencyMs / 1000);
    if (event.kind === 'limit' && event.latencyMs !== undefined)
      shown.latency = read(entry.latency, shown.latency, event.latencyMs / 1000);
    if (event.kind === 'released' || event.kind === 'limit' || event.priority === undefined) return;
    const key = `${event.priority} ${event.kind}`;
    let work = entry.work.get(key);
    if (work === undefined) {
      work = sink.series(INSTRUMENTS.adaptiveWork, Object.freeze([event.limit, event.priority, event.kind]));
      entry.work.set(key, work);
    }
    sink.add(work, 1);
  };
}
