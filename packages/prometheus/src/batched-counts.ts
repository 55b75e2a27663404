import type { InstrumentSpec, MetricsSink } from '@rl/core';
import type { Counter, Gauge, Histogram } from 'prom-client';

/** A label child: a counter's or gauge's (`inc`, by -1 too on a gauge) or a histogram's (`observe`). */
export type Child = Counter.Internal & Histogram.Internal<string>;

/**
 * How many values a histogram's series keeps before it hands them to prom-client (else at the next
 * collection): 2 kB per series, and one burst of prom-client's `observe` per 256 decisions.
 */
export const HISTOGRAM_BUFFER = 256;

/**
 * One series of the exporter: its label child, bound once, and what it was given since the registry
 * last collected: a counter's or gauge's sum (`pending`), a histogram's values (`values`, the first
 * `length` of them).
 */
export interface Cell {
  readonly child: Child;
  /** prom-client has the series (its first update went to the child at once): a sum that comes to 0 still shows it. */
  created: boolean;
  pending: number;
  readonly values: Float64Array | undefined;
  length: number;
}

/** A prom-client metric as far as collection goes: `collect`, the hook prom-client calls before it reads the values. */
interface Collected {
  collect?: (this: unknown) => unknown;
}

/** Hands `cell`'s sum or values to its prom-client child, and empties it. */
function flushCell(cell: Cell): void {
  const { child, values } = cell;
  if (values === undefined) {
    const value = cell.pending;
    if (value === 0) return;
    cell.pending = 0;
    child.inc(value);
    return;
  }
  const length = cell.length;
  cell.length = 0;
  for (let i = 0; i < length; i++) child.observe(values[i]!);
}

/**
 * A {@link MetricsSink} that keeps each series' updates in a cell of its own (a counter's or gauge's
 * `+=`, a histogram's value written into a buffer) instead of calling prom-client per event, whose
 * `inc` and `observe` look the series up by its labels (building their hash string) on every call, and
 * hands them to prom-client when a metric is collected (`registry.metrics()`, `metric.get()`): every
 * scrape and read sees exact counts. A histogram's buffer that fills is handed over at once
 * ({@link HISTOGRAM_BUFFER}); the first addition to a series (0 for one created at 0) reaches its child
 * at once, so the series exists from then on, whatever its later sums come to.
 *
 * `labelled` binds the child of an instrument's series; `metrics` are the metrics whose collection
 * flushes the cells: each gets a `collect` that flushes, then calls the one it had (another exporter's
 * on a shared registry). The cells live as long as those metrics.
 */
export function batchedSink(
  labelled: (instrument: InstrumentSpec, values: readonly string[]) => Child,
  metrics: readonly (Counter<string> | Gauge<string> | Histogram<string>)[],
): MetricsSink<Cell> {
  const cells: Cell[] = [];
  const flush = (): void => {
    for (const cell of cells) flushCell(cell);
  };
  for (const metric of metrics) {
    const collected = metric as unknown as Collected;
    const previous = collected.collect;
    collected.collect = function (this: unknown) {
      flush();
      return previous?.call(this);
    };
  }
  return {
    series: (instrument, values) => {
      const histogram = instrument.kind === 'histogram';
      const cell: Cell = {
        child: labelled(instrument, values),
        created: false,
        pending: 0,
        values: histogram ? new Float64Array(HISTOGRAM_BUFFER) : undefined,
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
      cell.child.inc(value);
    },
    record: (cell, value) => {
      // A value prom-client refuses is refused now, in the observer's call (reported as an observer's
      // error), not at the next scrape.
      if (!Number.isFinite(value)) return cell.child.observe(value);
      cell.values![cell.length++] = value;
      if (cell.length === HISTOGRAM_BUFFER) flushCell(cell);
    },
  };
}
