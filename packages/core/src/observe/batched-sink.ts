import type { InstrumentSpec } from './instruments.js';
import type { MetricsSink } from './metrics-model.js';

/**
 * How many values a histogram's series keeps before it hands them to the exporter's sink (else at the
 * next {@link BatchedSink.flush}): 2 kB per series, one burst of the library's calls per 256 values.
 */
export const HISTOGRAM_BUFFER = 256;

/**
 * One series of a {@link BatchedSink}: the exporter's handle, bound once, and what it was given since
 * the last flush: a counter's or gauge's sum (`pending`), a histogram's values (the first `length` of
 * `values`).
 */
export interface BatchedSeries<S> {
  readonly series: S;
  readonly histogram: boolean;
  /** The library has the series (its first update went through at once): a sum that comes to 0 still shows it. */
  created: boolean;
  pending: number;
  values: Float64Array | undefined;
  length: number;
}

/** A {@link MetricsSink} that keeps the updates of each series, and `flush`, which hands them to the exporter's sink. */
export interface BatchedSink<S> {
  readonly sink: MetricsSink<BatchedSeries<S>>;
  /** Hands every series' sum and values to the exporter's sink, and empties them. Call it before the library reads its values. */
  flush(): void;
}

/** Hands `cell`'s sum or values to `direct`, and empties it. */
function flushSeries<S>(direct: MetricsSink<S>, cell: BatchedSeries<S>): void {
  if (!cell.histogram) {
    const value = cell.pending;
    if (value === 0) return;
    cell.pending = 0;
    direct.add(cell.series, value);
    return;
  }
  const { values, length } = cell;
  cell.length = 0;
  for (let i = 0; i < length; i++) direct.record(cell.series, values![i]!);
}

/**
 * `direct`, an exporter's sink on its metrics library, batched: a counter's or gauge's update is a
 * `+=` in its series' cell, a histogram's value is written into a buffer (allocated at the series'
 * first value, {@link HISTOGRAM_BUFFER} values, handed over when full), instead of the library's call
 * per event (prom-client and the OpenTelemetry SDK look the series up by its labels, hashing them, on
 * every call). The exporter calls `flush` when the library collects, so every collection is exact.
 * The first update of a series goes to `direct` at once (a series created at 0 exists from then on,
 * whatever its later sums come to), and so does a histogram value that is not finite (the library's
 * refusal is thrown in the observer's call, not at the collection).
 */
export function batchedSink<S>(direct: MetricsSink<S>): BatchedSink<S> {
  const cells: BatchedSeries<S>[] = [];
  const sink: MetricsSink<BatchedSeries<S>> = {
    series: (instrument: InstrumentSpec, labelValues: readonly string[]) => {
      const cell: BatchedSeries<S> = {
        series: direct.series(instrument, labelValues),
        histogram: instrument.kind === 'histogram',
        created: false,
        pending: 0,
        values: undefined,
        length: 0,
      };
      cells.push(cell);
      return cell;
    },
    add: (cell, value) => {
      if (cell.created) {
        cell.pending += value;
        return;
      }
      cell.created = true;
      direct.add(cell.series, value);
    },
    // A reading is set when its value changes (an adaptive limit's window, not a decision): not batched.
    set: (cell, value) => direct.set(cell.series, value),
    record: (cell, value) => {
      if (!Number.isFinite(value)) return direct.record(cell.series, value);
      const values = (cell.values ??= new Float64Array(HISTOGRAM_BUFFER));
      values[cell.length++] = value;
      if (cell.length === HISTOGRAM_BUFFER) flushSeries(direct, cell);
    },
  };
  return {
    sink,
    flush: () => {
      for (const cell of cells) flushSeries(direct, cell);
    },
  };
}

/** What flushes one exporter's batched updates (a {@link BatchedSink}'s `flush`, or an object holding it). */
export interface Flusher {
  flush(): void;
}

/**
 * The exporters flushing into one collection point of a metrics library (a prom-client metric's
 * `collect`, an OpenTelemetry meter's batch callback), each held weakly: the library keeps one hook
 * for all of them, and an exporter the app dropped is forgotten once collected, with what it had
 * batched since the last collection (a hook per exporter kept every exporter made for the library's
 * life).
 */
export class LiveFlushers {
  private readonly live = new Set<WeakRef<Flusher>>();

  /** Holds `flusher` (weakly) until it is collected. */
  add(flusher: Flusher): void {
    this.live.add(new WeakRef(flusher));
  }

  /** Flushes every exporter still held, and forgets the collected ones. */
  flush(): void {
    for (const ref of this.live) {
      const flusher = ref.deref();
      if (flusher === undefined) this.live.delete(ref);
      else flusher.flush();
    }
  }
}
