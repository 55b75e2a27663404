import { describe, expect, it } from 'vitest';
import { batchedSink, HISTOGRAM_BUFFER, LiveFlushers } from './batched-sink.js';
import { INSTRUMENTS } from './instruments.js';
import type { MetricsSink } from './metrics-model.js';

/** A batched sink on an exporter's sink whose series are names, and the log of what reaches the exporter's. */
function directSink() {
  const calls: string[] = [];
  const direct: MetricsSink<string> = {
    series: (instrument, values) => [instrument.id, ...values].join(' '),
    add: (series, value) => void calls.push(`${series} +${value}`),
    record: (series, value) => void calls.push(`${series} = ${value}`),
    set: (series, value) => void calls.push(`${series} := ${value}`),
  };
  return { ...batchedSink(direct), calls };
}

describe('batchedSink', () => {
  it('passes a series’ first update at once, sums the later ones until a flush, and flushes nothing twice', () => {
    const { sink, flush, calls } = directSink();
    const decisions = sink.series(INSTRUMENTS.decisions, ['api', 'allowed']);
    const held = sink.series(INSTRUMENTS.heldRequests, ['api']);
    sink.add(decisions, 0);
    for (let i = 0; i < 5; i++) sink.add(decisions, 1);
    sink.add(held, 1);
    sink.add(held, -1);
    expect(calls).toEqual(['decisions api allowed +0', 'heldRequests api +1']);
    flush();
    flush();
    // The sums since the first updates, once: the second flush has nothing to hand over.
    expect(calls.slice(2)).toEqual(['decisions api allowed +5', 'heldRequests api +-1']);
  });

  it('keeps a histogram’s values until its buffer is full or a flush; a value that is not finite goes at once', () => {
    const { sink, flush, calls } = directSink();
    const delay = sink.series(INSTRUMENTS.delay, ['api']);
    for (let i = 1; i < HISTOGRAM_BUFFER; i++) sink.record(delay, i);
    sink.record(delay, Number.NaN);
    expect(calls).toEqual(['delay api = NaN']);
    sink.record(delay, HISTOGRAM_BUFFER);
    expect(calls).toHaveLength(1 + HISTOGRAM_BUFFER);
    expect(calls.at(-1)).toBe(`delay api = ${HISTOGRAM_BUFFER}`);
    sink.record(delay, 0.5);
    flush();
    expect(calls.at(-1)).toBe('delay api = 0.5');
    expect(calls).toHaveLength(2 + HISTOGRAM_BUFFER);
  });

  it('sets a reading at once, each time, with nothing left for a flush', () => {
    const { sink, flush, calls } = directSink();
    const latency = sink.series(INSTRUMENTS.adaptiveLatency, ['db']);
    sink.set(latency, 0.25);
    sink.set(latency, 0.1);
    flush();
    expect(calls).toEqual(['adaptiveLatency db := 0.25', 'adaptiveLatency db := 0.1']);
  });
});

describe('LiveFlushers', () => {
  it('flushes every exporter it holds, once per flush', () => {
    const flushed: string[] = [];
    const live = new LiveFlushers();
    const a = { flush: () => void flushed.push('a') };
    const b = { flush: () => void flushed.push('b') };
    live.add(a);
    live.add(b);
    live.flush();
    live.flush();
    expect(flushed).toEqual(['a', 'b', 'a', 'b']);
  });
});
