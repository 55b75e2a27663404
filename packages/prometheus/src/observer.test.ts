import {
  createLimiter,
  DECISION_OUTCOMES,
  fixedWindow,
  InvalidOptionError,
  type DecisionOutcome,
  type LabelId,
} from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { decisionEvent, feedObserverScenario, OBSERVER_SCENARIO_SERIES, EXPORTED_NAMES } from '@rl/test-support';
import fc from 'fast-check';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { prometheusObserver } from './index.js';

type Labels = Record<string, string | number>;

/** The value of one series in a scrape (`getMetricsAsJSON`), or undefined when the series does not exist. */
async function read(registry: Registry, name: string, labels: Labels): Promise<number | undefined> {
  const family = name.replace(/_(bucket|sum|count)$/, '');
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === family);
  const values = (metric?.values ?? []) as { value: number; labels: Labels; metricName?: string }[];
  const match = values.find(
    (v) =>
      (v.metricName ?? family) === name &&
      Object.keys(labels).length === Object.keys(v.labels).length &&
      Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  );
  return match?.value;
}

/** Two exporters on one registry (two middlewares, one `/metrics`). */
function twoExporters() {
  const registry = new Registry();
  return { registry, a: prometheusObserver({ registry }), b: prometheusObserver({ registry }) };
}

const decision = decisionEvent;
/** The Prometheus name of each label id of `@rl/core`'s table (its OpenTelemetry name without `rl.`, `.` as `_`). */
const LABEL: Record<LabelId, string> = {
  limit: 'limit',
  outcome: 'outcome',
  errorType: 'error_type',
  circuitState: 'circuit_state',
  leaseAction: 'lease_action',
  settleAction: 'settle_action',
  priority: 'priority',
  adaptiveOutcome: 'adaptive_outcome',
};

describe('prometheusObserver: reservations cancelled', () => {
  it('counts rl_reservations_cancelled_total per limit', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    observer.reservationCancelled({ limit: 'api', cost: 1 });
    observer.reservationCancelled({ limit: 'api', cost: 3 });
    observer.reservationCancelled({ limit: 'login', cost: 1 });
    expect(await read(registry, 'rl_reservations_cancelled_total', { limit: 'api' })).toBe(2);
    expect(await read(registry, 'rl_reservations_cancelled_total', { limit: 'login' })).toBe(1);
  });
});

describe('prometheusObserver: a known sequence of events', () => {
  it('counts decisions, delays, store durations, errors, holds and circuits exactly', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    feedObserverScenario(observer);
    for (const { instrument, labels: ids, value } of OBSERVER_SCENARIO_SERIES) {
      const name = EXPORTED_NAMES[instrument].prometheus;
      const labels = Object.fromEntries(Object.entries(ids).map(([id, v]) => [LABEL[id as LabelId], v]));
      expect([name, labels, await read(registry, name, labels)]).toEqual([name, labels, value]);
    }
    const histograms: [string, Labels, number | undefined][] = [
      // Only the one delay above 0; 0.25 s falls in the le="0.25" bucket (le is inclusive).
      ['rl_delay_seconds_count', { limit: 'api' }, 1],
      ['rl_delay_seconds_sum', { limit: 'api' }, 0.25],
      ['rl_delay_seconds_bucket', { limit: 'api', le: 0.1 }, 0],
      ['rl_delay_seconds_bucket', { limit: 'api', le: 0.25 }, 1],
      ['rl_delay_seconds_bucket', { limit: 'api', le: '+Inf' }, 1],
      ['rl_delay_seconds_count', { limit: 'login' }, undefined],
      // Five store answers (the deny cache made no call): 0.2 ms, 0.3 ms, 0.4 ms, 0.8 ms, 3 ms.
      ['rl_store_duration_seconds_count', { limit: 'api' }, 5],
      ['rl_store_duration_seconds_bucket', { limit: 'api', le: 0.00025 }, 1],
      ['rl_store_duration_seconds_bucket', { limit: 'api', le: 0.0005 }, 3],
      ['rl_store_duration_seconds_bucket', { limit: 'api', le: 0.001 }, 4],
      ['rl_store_duration_seconds_bucket', { limit: 'api', le: 0.005 }, 5],
    ];
    for (const [name, labels, value] of histograms)
      expect([name, labels, await read(registry, name, labels)]).toEqual([name, labels, value]);
    expect(await read(registry, 'rl_store_duration_seconds_sum', { limit: 'api' })).toBeCloseTo(0.0047, 12);

    observer.circuit({ limit: 'login', state: 'closed', domain: '10.0.0.1:7000', reason: undefined });
    expect(await read(registry, 'rl_circuits_open', { limit: 'login' })).toBe(0);
    expect(await read(registry, 'rl_circuit_transitions_total', { limit: 'login', circuit_state: 'closed' })).toBe(1);
  });

  it('registers the sixteen metrics under their names, types, help and labels', () => {
    const registry = new Registry();
    prometheusObserver({ registry });
    const metrics = registry.getMetricsAsArray().map((m) => {
      const { name, help, labelNames } = m as unknown as { name: string; help: string; labelNames: string[] };
      return [name, m.constructor.name, help.length > 0, labelNames.join(',')];
    });
    expect(metrics).toEqual([
      ['rl_decisions_total', 'Counter', true, 'limit,outcome'],
      ['rl_delay_seconds', 'Histogram', true, 'limit'],
      ['rl_store_duration_seconds', 'Histogram', true, 'limit'],
      ['rl_store_errors_total', 'Counter', true, 'limit,error_type'],
      ['rl_held_requests', 'Gauge', true, 'limit'],
      ['rl_holds_abandoned_total', 'Counter', true, 'limit'],
      ['rl_reservations_cancelled_total', 'Counter', true, 'limit'],
      ['rl_circuit_transitions_total', 'Counter', true, 'limit,circuit_state'],
      ['rl_circuits_open', 'Gauge', true, 'limit'],
      ['rl_lease_units_total', 'Counter', true, 'limit,lease_action'],
      ['rl_units_settled_total', 'Counter', true, 'limit,settle_action'],
      ['rl_adaptive_limit', 'Gauge', true, 'limit'],
      ['rl_adaptive_in_flight', 'Gauge', true, 'limit'],
      ['rl_adaptive_min_latency_seconds', 'Gauge', true, 'limit'],
      ['rl_adaptive_latency_seconds', 'Gauge', true, 'limit'],
      ['rl_adaptive_work_total', 'Counter', true, 'limit,priority,adaptive_outcome'],
    ]);
  });

  it('creates every outcome and both error types of a limit at 0 at its first event, and nothing else', async () => {
    const registry = new Registry();
    prometheusObserver({ registry }).decision(decision('api', 'allowed'));
    const json = await registry.getMetricsAsJSON();
    const series = (name: string) => json.find((m) => m.name === name)?.values.length;
    expect(series('rl_decisions_total')).toBe(DECISION_OUTCOMES.length);
    expect(series('rl_store_errors_total')).toBe(2);
    for (const name of [
      'rl_delay_seconds',
      'rl_store_duration_seconds',
      'rl_held_requests',
      'rl_holds_abandoned_total',
      'rl_circuit_transitions_total',
      'rl_circuits_open',
    ]) {
      expect([name, series(name)]).toEqual([name, 0]);
    }
  });

  it('counts the circuit of each failure domain once, however often it is reported', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    const circuit = (state: 'open' | 'closed', domain: string) =>
      observer.circuit({ limit: 'api', state, domain, reason: state === 'open' ? 'store-error' : undefined });
    const steps: ['open' | 'closed', string, number][] = [
      ['open', '10.0.0.1:7000', 1],
      ['open', '10.0.0.1:7000', 1],
      ['open', '10.0.0.2:7001', 2],
      ['closed', '10.0.0.1:7000', 1],
      ['closed', '10.0.0.1:7000', 1],
      ['closed', '10.0.0.2:7001', 0],
      ['closed', '10.0.0.3:7002', 0],
    ];
    for (const [state, domain, open] of steps) {
      circuit(state, domain);
      expect([state, domain, await read(registry, 'rl_circuits_open', { limit: 'api' })]).toEqual([
        state,
        domain,
        open,
      ]);
    }
    expect(await read(registry, 'rl_circuit_transitions_total', { limit: 'api', circuit_state: 'open' })).toBe(3);
  });

  it('never writes the key: not as a label, not anywhere in the scrape', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    observer.decision(decision('api', 'denied', { key: 'alice@example.com', storeMs: 1 }));
    observer.storeError({
      limit: 'api',
      kind: 'store-error',
      error: new Error('down'),
      action: 'deny',
      key: 'alice@example.com',
    });
    expect(await registry.metrics()).not.toContain('alice');
  });

  it('takes prefix and buckets', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry, prefix: 'app_rl_', delayBuckets: [0.5, 2], storeBuckets: [0.001] });
    observer.decision(decision('api', 'delayed', { delayMs: 1500, storeMs: 0.5 }));
    expect(await read(registry, 'app_rl_decisions_total', { limit: 'api', outcome: 'delayed' })).toBe(1);
    expect(await read(registry, 'app_rl_delay_seconds_bucket', { limit: 'api', le: 0.5 })).toBe(0);
    expect(await read(registry, 'app_rl_delay_seconds_bucket', { limit: 'api', le: 2 })).toBe(1);
    expect(await read(registry, 'app_rl_store_duration_seconds_bucket', { limit: 'api', le: 0.001 })).toBe(1);
    expect(registry.getSingleMetric('rl_decisions_total')).toBeUndefined();
  });
});

describe('prometheusObserver: the hot path', () => {
  it('binds the label children of a limit once, not per decision', () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    const labels = vi.spyOn(observer.metrics.decisions, 'labels');
    const observe = vi.spyOn(observer.metrics.storeDuration, 'labels');
    for (let i = 0; i < 1000; i++) {
      observer.decision(
        decision(i % 2 ? 'api' : 'login', DECISION_OUTCOMES[i % DECISION_OUTCOMES.length]!, { storeMs: 1 }),
      );
    }
    expect(labels).toHaveBeenCalledTimes(2 * DECISION_OUTCOMES.length);
    expect(observe).toHaveBeenCalledTimes(2);
  });

  it('counts an outcome it does not know (from a newer core) under its own label', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    observer.decision(decision('api', 'queued' as DecisionOutcome));
    observer.decision(decision('api', 'queued' as DecisionOutcome));
    expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'queued' })).toBe(2);
  });
});

describe('prometheusObserver: counts summed per series, handed over at collection', () => {
  it('every scrape, and every read of a metric, equals the decisions of a limiter so far', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 3, window: '1h' }),
      store: new MemoryStore({ sweepInterval: false }),
      name: 'api',
      observer,
    });
    const decided = { allowed: 0, denied: 0 };
    for (const [round, decisions] of [1, 250, 0, 1000].entries()) {
      for (let i = 0; i < decisions; i++)
        decided[limiter.consumeSync(`k${(i + round) % 7}`).allowed ? 'allowed' : 'denied']++;
      expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'allowed' })).toBe(decided.allowed);
      expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'denied' })).toBe(decided.denied);
      // More than a series' buffer of store durations in a round: handed over when full, and the rest at the scrape.
      const count = await read(registry, 'rl_store_duration_seconds_count', { limit: 'api' });
      expect(count ?? 0).toBe(decided.allowed + decided.denied);
    }
    limiter.consumeSync('k0');
    const values = (await observer.metrics.decisions.get()).values;
    expect(values.find((v) => v.labels.outcome === 'denied')?.value).toBe(decided.denied + 1);
  });

  it('with storeDurations: false, times nothing: the store duration histogram stays empty', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry, storeDurations: false });
    expect(observer.storeDurations).toBe(false);
    const store = new MemoryStore({ sweepInterval: false });
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 3, window: '1h' }), store, name: 'api', observer });
    limiter.consumeSync('ann');
    expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'allowed' })).toBe(1);
    expect(await read(registry, 'rl_store_duration_seconds_count', { limit: 'api' })).toBeUndefined();
  });

  it('refuses a value prom-client refuses in the observer’s call, not at the next scrape', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    expect(() => observer.decision(decision('api', 'allowed', { storeMs: Number.NaN }))).toThrow(TypeError);
    expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'allowed' })).toBe(1);
  });

  it('shows a series whose additions since its first come to 0 (a hold started and ended) at 0, not as missing', async () => {
    const registry = new Registry();
    const observer = prometheusObserver({ registry });
    observer.hold({ limit: 'api', state: 'started', delayMs: 5 });
    observer.hold({ limit: 'api', state: 'ended', delayMs: 5 });
    expect(await read(registry, 'rl_held_requests', { limit: 'api' })).toBe(0);
  });

  it('keeps a collect hook the metric already had (another exporter’s), and flushes both exporters', async () => {
    const { registry, a, b } = twoExporters();
    for (let i = 0; i < 10; i++) a.decision(decision('api', 'allowed'));
    for (let i = 0; i < 5; i++) b.decision(decision('api', 'allowed'));
    expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'allowed' })).toBe(15);
    expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'allowed' })).toBe(15);
  });
});

describe('prometheusObserver: one registry, several exporters', () => {
  it('lets a second exporter reuse the metrics of the first; their counts add up', async () => {
    const { registry, a, b } = twoExporters();
    expect(b.metrics.decisions).toBe(a.metrics.decisions);
    a.decision(decision('api', 'allowed'));
    a.hold({ limit: 'api', state: 'started', delayMs: 10 });
    b.decision(decision('api', 'allowed'));
    b.decision(decision('search', 'denied'));
    // b's first sight of "api" must not reset what a counted.
    expect(await read(registry, 'rl_decisions_total', { limit: 'api', outcome: 'allowed' })).toBe(2);
    expect(await read(registry, 'rl_decisions_total', { limit: 'search', outcome: 'denied' })).toBe(1);
    b.circuit({ limit: 'api', state: 'open', domain: undefined, reason: 'timeout' });
    a.circuit({ limit: 'api', state: 'open', domain: undefined, reason: 'timeout' });
    expect(await read(registry, 'rl_circuits_open', { limit: 'api' })).toBe(2);
    b.hold({ limit: 'api', state: 'started', delayMs: 10 });
    expect(await read(registry, 'rl_held_requests', { limit: 'api' })).toBe(2);
  });

  it("adds up two exporters' adaptive permits, and shows the latency last set (a sum of latencies means nothing)", async () => {
    const { registry, a, b } = twoExporters();
    const event = (permits: number, latencyMs: number) =>
      ({ limit: 'db', kind: 'limit', priority: undefined, permits, inFlight: 0, minLatencyMs: 20, latencyMs }) as const;
    a.adaptive(event(10, 250));
    b.adaptive(event(8, 300));
    a.adaptive(event(12, 100));
    expect(await read(registry, 'rl_adaptive_limit', { limit: 'db' })).toBe(20);
    expect(await read(registry, 'rl_adaptive_latency_seconds', { limit: 'db' })).toBe(0.1);
    expect(await read(registry, 'rl_adaptive_min_latency_seconds', { limit: 'db' })).toBe(0.02);
  });

  it('refuses a registry where a name is taken by a metric it cannot count into, and says what to do', () => {
    const registry = new Registry();
    new Counter({ name: 'rl_held_requests', help: 'not ours', registers: [registry] });
    expect(() => prometheusObserver({ registry })).toThrow(InvalidOptionError);
    expect(() => prometheusObserver({ registry })).toThrow(
      /rl_held_requests with another type \(this exporter needs a Gauge\)/,
    );

    const other = new Registry();
    new Counter({ name: 'rl_decisions_total', help: 'not ours', labelNames: ['route'], registers: [other] });
    expect(() => prometheusObserver({ registry: other })).toThrow(/labels \[route\]/);

    const shared = new Registry();
    prometheusObserver({ registry: shared, delayBuckets: [1, 2] });
    expect(() => prometheusObserver({ registry: shared })).toThrow(
      /rl_delay_seconds with buckets \[1, 2\].*same buckets/,
    );
    expect(() => prometheusObserver({ registry: shared, prefix: 'other_' })).not.toThrow();
  });
});

describe('prometheusObserver: options', () => {
  const registry = new Registry();
  it.each([
    [{}, 'prometheusObserver.registry'],
    [{ registry: {} }, 'prometheusObserver.registry'],
    [{ registry, prefix: '1rl_' }, 'prometheusObserver.prefix'],
    [{ registry, prefix: 'rl-' }, 'prometheusObserver.prefix'],
    [{ registry, prefix: '__rl_' }, 'prometheusObserver.prefix'],
    [{ registry, delayBuckets: [] }, 'prometheusObserver.delayBuckets'],
    [{ registry, delayBuckets: [0.5, 0.1] }, 'prometheusObserver.delayBuckets'],
    [{ registry, storeBuckets: [0, 1] }, 'prometheusObserver.storeBuckets'],
    [{ registry, storeBuckets: [Number.NaN] }, 'prometheusObserver.storeBuckets'],
    [{ registry, buckets: [1] }, 'prometheusObserver.buckets'],
    [{ registry, storeDurations: 1 }, 'prometheusObserver.storeDurations'],
  ])('%o is refused, naming %s', (options, field) => {
    expect(() => prometheusObserver(options as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field }),
    );
  });
});

describe('prometheusObserver: property', () => {
  const outcome = fc.constantFrom(...DECISION_OUTCOMES);
  const limit = fc.constantFrom('a', 'b', 'c');
  const event = fc.oneof(
    fc.record({
      type: fc.constant('decision' as const),
      limit,
      outcome,
      delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 70_000 })),
      storeMs: fc.option(fc.double({ min: 0, max: 2000, noNaN: true }), { nil: undefined }),
    }),
    fc.record({
      type: fc.constant('storeError' as const),
      limit,
      kind: fc.constantFrom('store-error' as const, 'timeout' as const),
    }),
    fc.record({
      type: fc.constant('hold' as const),
      limit,
      state: fc.constantFrom('started' as const, 'ended' as const, 'abandoned' as const),
    }),
  );

  it('the scrape holds exactly the events fed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(event, { maxLength: 200 }), async (events) => {
        const registry = new Registry();
        const observer = prometheusObserver({ registry });
        const expected = new Map<string, number>();
        const add = (series: string, by = 1) => expected.set(series, (expected.get(series) ?? 0) + by);
        for (const e of events) {
          if (e.type === 'decision') {
            observer.decision(decision(e.limit, e.outcome, { delayMs: e.delayMs, storeMs: e.storeMs }));
            add(`rl_decisions_total ${e.limit} ${e.outcome}`);
            if (e.delayMs > 0) add(`rl_delay_seconds_count ${e.limit}`);
            if (e.storeMs !== undefined) add(`rl_store_duration_seconds_count ${e.limit}`);
          } else if (e.type === 'storeError') {
            observer.storeError({
              limit: e.limit,
              kind: e.kind,
              error: new Error('x'),
              action: 'deny',
              key: undefined,
            });
            add(`rl_store_errors_total ${e.limit} ${e.kind}`);
          } else {
            observer.hold({ limit: e.limit, state: e.state, delayMs: 1 });
            add(`rl_held_requests ${e.limit}`, e.state === 'started' ? 1 : -1);
            if (e.state === 'abandoned') add(`rl_holds_abandoned_total ${e.limit}`);
          }
        }
        const scraped = new Map<string, number>();
        for (const metric of await registry.getMetricsAsJSON()) {
          for (const v of metric.values as { value: number; labels: Labels; metricName?: string }[]) {
            const name = v.metricName ?? metric.name;
            if (name.endsWith('_bucket') || name.endsWith('_sum') || v.value === 0) continue;
            scraped.set(
              [name, v.labels.limit, v.labels.outcome ?? v.labels.error_type].filter((x) => x !== undefined).join(' '),
              v.value,
            );
          }
        }
        for (const [series, value] of expected) if (value === 0) expected.delete(series);
        expect(scraped).toEqual(expected);
      }),
      { numRuns: 100 },
    );
  });
});

describe('many exporters on one registry', () => {
  it('a scrape flushes each live exporter once, whatever the number made: no chain of hooks (6,000 overflowed the stack of a scrape)', async () => {
    const registry = new Registry();
    for (let i = 0; i < 20_000; i++) prometheusObserver({ registry }).decision(decision('api', 'allowed'));
    const text = await registry.metrics();
    expect(text).toContain('rl_decisions_total{limit="api",outcome="allowed"} 20000');
  });
});
