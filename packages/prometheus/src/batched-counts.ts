import type { InstrumentSpec, MetricsSink } from '@rl/core';
import type { Counter, Gauge, Histogram } from 'prom-client';

/** A label child: a counter's or gauge's (`inc`, by -1 too on a gauge) or a histogram's (`observe`). */
export type Child = Counter.Internal & Histogram.Internal<string>;

/**
 * One series of the exporter: its label child, bound once, and what was added to it since the
 * registry last collected (counters and gauges; a histogram's values go to its child at once).
 */
export interface Cell {
  readonly child: Child;
  pending: number;
}

/** A prom-client metric as far as collection goes: `collect`, the hook prom-client calls before it reads the values. */
interface Collected {
  collect?: (this: unknown) => unknown;
}

/**
 * A {@link MetricsSink} that adds to counters and gauges in per-series cells (a `+=` per decision)
 * instead of prom-client's `inc`, which hashes the series' labels on every call, and hands the sums
 * to the children when a metric is collected (`registry.metrics()`, `metric.get()`): every scrape and
 * read sees exact counts. An addition of 0 (a series created at 0) reaches its child at once, so the
 * series exists before its first count. A histogram records at once.
 *
 * `labelled` binds the child of an instrument's series; `metrics` are the counters and gauges whose
 * collection flushes the cells: each gets a `collect` that flushes, then calls the one it had (another
 * exporter's on a shared registry). The cells live as long as those metrics.
 */
export function batchedSink(
  labelled: (instrument: InstrumentSpec, values: readonly string[]) => Child,
  metrics: readonly (Counter<string> | Gauge<string>)[],
): MetricsSink<Cell> {
  const cells: Cell[] = [];
  const flush = (): void => {
    for (const cell of cells) {
      const value = cell.pending;
      if (value === 0) continue;
      cell.pending = 0;
      cell.child.inc(value);
    }
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
      const cell = { child: labelled(instrument, values), pending: 0 };
      if (instrument.kind !== 'histogram') cells.push(cell);
      return cell;
    },
    add: (cell, value) => {
      if (value === 0) cell.child.inc(0);
      else cell.pending += value;
    },
    record: (cell, value) => cell.child.observe(value),
  };
}
