import { batchedSink, LiveFlushers, type BatchedSeries, type Flusher, type MetricsSink } from '@rl/core';
import type { Counter, Gauge, Histogram } from 'prom-client';

/** A label child: a counter's or gauge's (`inc`, by -1 too on a gauge; a reading's `set`) or a histogram's (`observe`). */
export type Child = Counter.Internal & Gauge.Internal<string> & Histogram.Internal<string>;

/** A prom-client metric as far as collection goes: `collect`, the hook prom-client calls before it reads the values. */
interface Collected {
  collect?: (this: unknown) => unknown;
}

/** A sink that batches, and flushes its batch into the metrics when one is collected (see {@link collectedSink}). */
export interface CollectedSink extends MetricsSink<BatchedSeries<Child>>, Flusher {}

/**
 * The exporters flushing into each prom-client metric, each held weakly (an exporter dropped is
 * forgotten at the next collection), read by the one `collect` hook the metric gets.
 */
const flushersByMetric = new WeakMap<object, LiveFlushers>();

/**
 * `direct` (updates of label children, bound once per series) batched by `@rl/core`'s `batchedSink`,
 * and flushed when any of `metrics` is collected (`registry.metrics()`, `metric.get()`). Each metric
 * gets one `collect` hook, the first time an exporter flushes into it, that flushes every live
 * exporter sharing it (a registry's metrics are shared by the exporters on it) and then calls the
 * `collect` the metric had: not a chain of one hook per exporter, which grew with every exporter made
 * and kept each alive (6,000 exporters on one registry overflowed the stack of a scrape). So
 * prom-client's `inc` and `observe`, which build the series' label hash on every call (and `observe` a
 * property name of the bucket bound), run in bursts, and every scrape is exact for the exporters
 * still held. An exporter the app dropped is forgotten once collected by the garbage collector,
 * with the increments it had batched since the last scrape (a series' first update is never batched).
 */
export function collectedSink(
  direct: MetricsSink<Child>,
  metrics: readonly (Counter<string> | Gauge<string> | Histogram<string>)[],
): CollectedSink {
  const { sink, flush } = batchedSink(direct);
  // The sink is its own flusher: while the exporter holds it, so do the metrics' sets (weakly).
  const collected: CollectedSink = { series: sink.series, add: sink.add, record: sink.record, set: sink.set, flush };
  for (const metric of metrics) flushersOf(metric).add(collected);
  return collected;
}

/** The flushers of `metric`, its `collect` hook installed with the set. */
function flushersOf(metric: object): LiveFlushers {
  const known = flushersByMetric.get(metric);
  if (known !== undefined) return known;
  const live = new LiveFlushers();
  flushersByMetric.set(metric, live);
  const collected = metric as Collected;
  const previous = collected.collect;
  collected.collect = function (this: unknown) {
    live.flush();
    return previous?.call(this);
  };
  return live;
}
