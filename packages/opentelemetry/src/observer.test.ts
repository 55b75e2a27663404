import type { Attributes } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import { DECISION_OUTCOMES, LABEL_NAMES } from '@rl/core';
import { decisionEvent, feedObserverScenario, OBSERVER_SCENARIO_SERIES, EXPORTED_NAMES } from '@rl/test-support';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { ATTRIBUTES, openTelemetryObserver, type OpenTelemetryObserverOptions } from './index.js';

/** A reader that collects only when asked: no export interval, no timer. */
class ManualReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** One instrument as collected: its points' type (`GAUGE`, `HISTOGRAM`; a sum `monotonic SUM` or `SUM`), unit and points. */
interface Scraped {
  readonly type: string;
  readonly unit: string;
  readonly points: DataPoint<number | Histogram>[];
}

/** A meter, and a scrape that collects its metrics into the SDK's in-memory exporter and returns the data points by instrument name. */
function setup(options: Omit<OpenTelemetryObserverOptions, 'meter'> = {}) {
  const reader = new ManualReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('rl-test');
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const observer = openTelemetryObserver({ meter, ...options });
  async function scrape(): Promise<Map<string, Scraped>> {
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);
    exporter.export(resourceMetrics, () => {});
    const byName = new Map<string, Scraped>();
    for (const scope of exporter.getMetrics().at(-1)!.scopeMetrics) {
      for (const metric of scope.metrics)
        byName.set(metric.descriptor.name, {
          type:
            metric.dataPointType === DataPointType.SUM && metric.isMonotonic
              ? 'monotonic SUM'
              : DataPointType[metric.dataPointType],
          unit: metric.descriptor.unit,
          points: metric.dataPoints as DataPoint<number | Histogram>[],
        });
    }
    return byName;
  }
  /** The value of the point with exactly these attributes (a number, or a histogram), undefined when there is none. */
  async function read(name: string, attributes: Attributes): Promise<number | Histogram | undefined> {
    const same = (a: Attributes) =>
      Object.keys(a).length === Object.keys(attributes).length &&
      Object.entries(attributes).every(([k, v]) => a[k] === v);
    return (await scrape()).get(name)?.points.find((p) => same(p.attributes))?.value;
  }
  return { meter, observer, scrape, read };
}

const decision = decisionEvent;
const api = { 'rl.limit': 'api' };
const login = { 'rl.limit': 'login' };

describe('openTelemetryObserver: reservations cancelled', () => {
  it('counts rl.reservations.cancelled per limit', async () => {
    const { observer, read } = setup();
    observer.reservationCancelled({ limit: 'api', cost: 1 });
    observer.reservationCancelled({ limit: 'api', cost: 3 });
    expect(await read('rl.reservations.cancelled', api)).toBe(2);
  });
});

describe('openTelemetryObserver: a known sequence of events', () => {
  it('names the attributes by the table, the error kind by OpenTelemetry’s own `error.type`', () => {
    expect(ATTRIBUTES).toBe(LABEL_NAMES);
    expect([ATTRIBUTES.limit, ATTRIBUTES.errorType]).toEqual(['rl.limit', 'error.type']);
  });

  it('records decisions, delays, store durations, errors, holds, circuits and lease units exactly', async () => {
    const { observer, read, scrape } = setup();
    feedObserverScenario(observer);
    for (const { instrument, labels, value } of OBSERVER_SCENARIO_SERIES) {
      const name = EXPORTED_NAMES[instrument].openTelemetry;
      const attributes = Object.fromEntries(
        Object.entries(labels).map(([label, v]) => [LABEL_NAMES[label as keyof typeof labels], v]),
      );
      expect([name, attributes, await read(name, attributes)]).toEqual([name, attributes, value]);
    }

    const delay = (await read('rl.delay', api)) as Histogram;
    expect([delay.count, delay.sum]).toEqual([1, 0.25]);
    // Boundaries [.., 0.1, 0.25, 0.5, ..]: 0.25 s counts in the bucket (0.1, 0.25].
    expect(delay.buckets.counts[delay.buckets.boundaries.indexOf(0.25)]).toBe(1);
    expect(await read('rl.delay', login)).toBeUndefined();
    const store = (await read('rl.store.duration', api)) as Histogram;
    expect(store.count).toBe(5);
    expect(store.buckets.boundaries.slice(0, 5)).toEqual([0.0001, 0.00025, 0.0005, 0.001, 0.0025]);
    expect(store.buckets.counts.slice(0, 6)).toEqual([0, 1, 2, 1, 0, 1]);

    observer.circuit({ limit: 'login', state: 'closed', domain: '10.0.0.1:7000', reason: undefined });
    expect(await read('rl.circuits.open', login)).toBe(0);
    const units = Object.fromEntries([...(await scrape())].map(([name, { unit }]) => [name, unit]));
    expect(units).toEqual({
      'rl.decisions': '{decision}',
      'rl.delay': 's',
      'rl.store.duration': 's',
      'rl.store.errors': '{error}',
      'rl.held_requests': '{request}',
      'rl.holds.abandoned': '{request}',
      'rl.circuit.transitions': '{transition}',
      'rl.circuits.open': '{circuit}',
      'rl.lease.units': '{unit}',
    });
  });

  it('records every outcome and both error types of a limit as 0 at its first event', async () => {
    const { observer, scrape } = setup();
    observer.decision(decision('api', 'allowed'));
    const metrics = await scrape();
    expect(metrics.get('rl.decisions')!.points.map((p) => [p.attributes['rl.outcome'], p.value])).toEqual(
      DECISION_OUTCOMES.map((o) => [o, o === 'allowed' ? 1 : 0]),
    );
    expect(metrics.get('rl.store.errors')!.points.map((p) => p.value)).toEqual([0, 0]);
    expect(metrics.has('rl.delay')).toBe(false);
  });

  it('never records the key', async () => {
    const { observer, scrape } = setup();
    observer.decision(decision('api', 'denied', { key: 'alice@example.com', storeMs: 1 }));
    observer.storeError({
      limit: 'api',
      kind: 'timeout',
      error: new Error('t'),
      action: 'deny',
      key: 'alice@example.com',
    });
    expect(JSON.stringify([...(await scrape())])).not.toContain('alice');
  });

  it('reuses one frozen attribute object per limit and outcome', () => {
    const { observer } = setup();
    const seen = new Set<Attributes>();
    const add = observer.instruments.decisions.add.bind(observer.instruments.decisions);
    observer.instruments.decisions.add = (value, attributes) => {
      seen.add(attributes!);
      add(value, attributes);
    };
    for (let i = 0; i < 500; i++)
      observer.decision(decision(i % 2 ? 'api' : 'login', DECISION_OUTCOMES[i % DECISION_OUTCOMES.length]!));
    expect(seen.size).toBe(2 * DECISION_OUTCOMES.length);
    for (const attributes of seen) expect(Object.isFrozen(attributes)).toBe(true);
  });

  it('takes a prefix and bucket boundaries', async () => {
    const { observer, read } = setup({ prefix: 'app.rl.', delayBoundaries: [0.5, 2] });
    observer.decision(decision('api', 'delayed', { delayMs: 1500 }));
    expect(await read('app.rl.decisions', { ...api, 'rl.outcome': 'delayed' })).toBe(1);
    expect(((await read('app.rl.delay', api)) as Histogram).buckets).toEqual({
      boundaries: [0.5, 2],
      counts: [0, 1, 0],
    });
  });

  it('lets two exporters share one meter; their values add up', async () => {
    const { meter, observer, read } = setup();
    const second = openTelemetryObserver({ meter });
    observer.decision(decision('api', 'allowed'));
    second.decision(decision('api', 'allowed'));
    observer.hold({ limit: 'api', state: 'started', delayMs: 5 });
    second.hold({ limit: 'api', state: 'started', delayMs: 5 });
    expect(await read('rl.decisions', { ...api, 'rl.outcome': 'allowed' })).toBe(2);
    expect(await read('rl.held_requests', api)).toBe(2);
  });
});

describe('openTelemetryObserver: many exporters on one meter', () => {
  it('the meter gets one flush callback however many exporters are made (the SDK keeps a callback for the meter’s life); each is flushed', async () => {
    const { meter, read } = setup();
    const register = vi.spyOn(meter, 'addBatchObservableCallback');
    const gauges = vi.spyOn(meter, 'createObservableGauge');
    const observers = Array.from({ length: 100 }, () => openTelemetryObserver({ meter }));
    for (const observer of observers) {
      observer.decision(decision('api', 'allowed'));
      observer.decision(decision('api', 'allowed'));
    }
    expect([register.mock.calls.length, gauges.mock.calls.length]).toEqual([0, 0]);
    expect(await read('rl.decisions', { ...api, 'rl.outcome': 'allowed' })).toBe(200);
  });
});

describe('openTelemetryObserver: an adaptive limit', () => {
  const adaptive = (limit: string, permits: number, latencyMs: number) =>
    ({ limit, kind: 'limit', priority: undefined, permits, inFlight: 0, minLatencyMs: 20, latencyMs }) as const;

  it('shows its permits as an up-down counter and its latencies as gauges of the last value', async () => {
    const { observer, scrape, read } = setup();
    observer.adaptive(adaptive('db', 10, 250));
    observer.adaptive(adaptive('db', 12, 100));
    const points = await scrape();
    expect(
      ['rl.adaptive.limit', 'rl.adaptive.min_latency', 'rl.adaptive.latency'].map((n) => points.get(n)?.type),
    ).toEqual(['SUM', 'GAUGE', 'GAUGE']);
    expect(await read('rl.adaptive.limit', { 'rl.limit': 'db' })).toBe(12);
    expect(await read('rl.adaptive.min_latency', { 'rl.limit': 'db' })).toBe(0.02);
    expect(await read('rl.adaptive.latency', { 'rl.limit': 'db' })).toBe(0.1);
  });

  it('two exporters on one meter: the permits add up, a latency is the last one set, not a sum', async () => {
    const { meter, observer, read } = setup();
    const second = openTelemetryObserver({ meter });
    observer.adaptive(adaptive('db', 10, 250));
    second.adaptive(adaptive('db', 8, 300));
    expect(await read('rl.adaptive.limit', { 'rl.limit': 'db' })).toBe(18);
    expect(await read('rl.adaptive.latency', { 'rl.limit': 'db' })).toBe(0.3);
  });

  it('refuses a meter without createGauge (an API before 1.9), naming the version', () => {
    const { meter } = setup();
    const old = { ...meter, createGauge: undefined } as unknown as typeof meter;
    expect(() => openTelemetryObserver({ meter: old })).toThrow(/1\.9 or later/);
  });
});

describe('openTelemetryObserver: updates batched, handed to the SDK when it collects', () => {
  it('every collection equals the events so far, across bursts longer than a histogram’s buffer', async () => {
    const { observer, read, scrape } = setup();
    let events = 0;
    for (const burst of [1, 300, 0, 1000]) {
      for (let i = 0; i < burst; i++) observer.decision(decision('api', 'allowed', { storeMs: 1 }));
      events += burst;
      expect(await read('rl.decisions', { ...api, 'rl.outcome': 'allowed' })).toBe(events);
      expect(((await read('rl.store.duration', api)) as Histogram).count).toBe(events);
    }
    // The gauge whose callback flushes is never observed: no export shows it.
    expect([...(await scrape()).keys()].filter((name) => name.includes('flush'))).toEqual([]);
  });

  it('shows a series whose updates since its first come to 0 (a hold started and ended) at 0', async () => {
    const { observer, read } = setup();
    observer.hold({ limit: 'api', state: 'started', delayMs: 5 });
    observer.hold({ limit: 'api', state: 'ended', delayMs: 5 });
    expect(await read('rl.held_requests', api)).toBe(0);
  });

  it('with storeDurations: false, records no store duration', async () => {
    const { observer, read } = setup({ storeDurations: false });
    expect(observer.storeDurations).toBe(false);
    observer.decision(decision('api', 'allowed'));
    expect(await read('rl.decisions', { ...api, 'rl.outcome': 'allowed' })).toBe(1);
    expect(await read('rl.store.duration', api)).toBeUndefined();
  });
});

describe('openTelemetryObserver: options', () => {
  const { meter } = setup();
  it.each([
    [{}, 'openTelemetryObserver.meter'],
    [{ meter: { createCounter() {} } }, 'openTelemetryObserver.meter'],
    [{ meter, prefix: '1rl.' }, 'openTelemetryObserver.prefix'],
    [{ meter, prefix: 'rl ' }, 'openTelemetryObserver.prefix'],
    [{ meter, prefix: `r${'l'.repeat(200)}.` }, 'openTelemetryObserver.prefix'],
    [{ meter, delayBoundaries: [] }, 'openTelemetryObserver.delayBoundaries'],
    [{ meter, storeBoundaries: [0.2, 0.1] }, 'openTelemetryObserver.storeBoundaries'],
    [{ meter, storeDurations: 'yes' }, 'openTelemetryObserver.storeDurations'],
    [{ meter, registry: {} }, 'openTelemetryObserver.registry'],
  ])('%o is refused, naming %s', (options, field) => {
    expect(() => openTelemetryObserver(options as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field }),
    );
  });
});

describe('openTelemetryObserver: property', () => {
  const limit = fc.constantFrom('a', 'b');
  const event = fc.oneof(
    fc.record({
      type: fc.constant('decision' as const),
      limit,
      outcome: fc.constantFrom(...DECISION_OUTCOMES),
      delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 70_000 })),
    }),
    fc.record({
      type: fc.constant('hold' as const),
      limit,
      state: fc.constantFrom('started' as const, 'ended' as const, 'abandoned' as const),
    }),
    fc.record({
      type: fc.constant('circuit' as const),
      limit,
      state: fc.constantFrom('open' as const, 'closed' as const),
      domain: fc.constantFrom('n1', 'n2'),
    }),
  );

  it('the collected points equal the events fed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(event, { maxLength: 150 }), async (events) => {
        const { observer, scrape } = setup();
        const expected = new Map<string, number>();
        const add = (series: string, by: number) => expected.set(series, (expected.get(series) ?? 0) + by);
        const open = new Set<string>();
        for (const e of events) {
          if (e.type === 'decision') {
            observer.decision(decision(e.limit, e.outcome, { delayMs: e.delayMs }));
            add(`rl.decisions ${e.limit} ${e.outcome}`, 1);
            if (e.delayMs > 0) add(`rl.delay ${e.limit}`, 1);
          } else if (e.type === 'hold') {
            observer.hold({ limit: e.limit, state: e.state, delayMs: 1 });
            add(`rl.held_requests ${e.limit}`, e.state === 'started' ? 1 : -1);
            if (e.state === 'abandoned') add(`rl.holds.abandoned ${e.limit}`, 1);
          } else {
            observer.circuit({ limit: e.limit, state: e.state, domain: e.domain, reason: undefined });
            const id = `${e.limit} ${e.domain}`;
            if (e.state === 'open') open.add(id);
            else open.delete(id);
          }
        }
        for (const id of open) add(`rl.circuits.open ${id.split(' ')[0]}`, 1);
        const collected = new Map<string, number>();
        for (const [name, { points }] of await scrape()) {
          if (name === 'rl.store.errors' || name === 'rl.circuit.transitions') continue;
          for (const p of points) {
            const value = typeof p.value === 'number' ? p.value : p.value.count;
            if (value !== 0)
              collected.set(
                [name, p.attributes['rl.limit'], p.attributes['rl.outcome']].filter((x) => x !== undefined).join(' '),
                value,
              );
          }
        }
        for (const [series, value] of expected) if (value === 0) expected.delete(series);
        expect(collected).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});
