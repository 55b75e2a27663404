import { batchedSink, type BatchedSeries, type MetricsSink } from '@rl/core';
import type { Counter, Gauge, Histogram } from 'prom-client';

/** A label child: a counter's or gauge's (`inc`, by -1 too on a gauge) or a histogram's (`observe`). */
export type Child = Counter.Internal & Histogram.Internal<string>;

/** A prom-client metric as far as collection goes: `collect`, the hook prom-client calls before it reads the values. */
interface Collected {
  collect?: (this: unknown) => unknown;
}

/**
 * `direct` (updates of label children, bound once per series) batched by `@rl/core`'s `batchedSink`,
 * and flushed when any of `metrics` is collected (`registry.metrics()`, `metric.get()`): each gets a
 * `collect` that flushes, then calls the one it had (another exporter's on a shared registry). So
 * prom-client's `inc` and `observe`, which build the series' label hash on every call (and `observe`
 * a property name of the bucket bound), run in bursts, and every scrape is exact. The cells live as
 * long as the metrics.
 */
export function collectedSink(
  direct: MetricsSink<Child>,
  metrics: readonly (Counter<string> | Gauge<string> | Histogram<string>)[],
): MetricsSink<BatchedSeries<Child>> {
  const { sink, flush } = batchedSink(direct);
  for (const metric of metrics) {
    const collected = metric as unknown as Collected;
    const previous = collected.collect;
    collected.collect = function (this: unknown) {
      flush();
      return previous?.call(this);
    };
  }
  return sink;
}
