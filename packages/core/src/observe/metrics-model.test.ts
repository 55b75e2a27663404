import { describe, expect, it } from 'vitest';
import { INSTRUMENTS, type InstrumentSpec } from './instruments.js';
import { createMetricsModel, type MetricsSink } from './metrics-model.js';
import { decisionEvent } from './decision-event.js';
import { DECISION_OUTCOMES, type AdaptiveConcurrencyEvent, type DecisionOutcome, type Observer } from './observer.js';

/** A sink whose handles are the series' names (`decisions api allowed`), logging every call. */
function recordingSink() {
  const bound: string[] = [];
  const updates: string[] = [];
  const sink: MetricsSink<string> = {
    series(instrument: InstrumentSpec, labelValues: readonly string[]): string {
      expect(labelValues).toHaveLength(instrument.labels.length);
      expect(Object.isFrozen(labelValues)).toBe(true);
      const name = [instrument.id, ...labelValues].join(' ');
      bound.push(name);
      return name;
    },
    add: (series, value) => void updates.push(`${series} ${value >= 0 ? '+' : ''}${value}`),
    record: (series, value) => void updates.push(`${series} = ${value}`),
    set: (series, value) => void updates.push(`${series} := ${value}`),
  };
  return { sink, bound, updates };
}

/** A metrics model on a {@link recordingSink}. */
function recordingModel() {
  const { sink, bound, updates } = recordingSink();
  return { model: createMetricsModel(sink), bound, updates };
}

const decision = decisionEvent;

/** A store error of `limit`, its key `key` (never read). */
const storeError = (limit: string, kind: 'store-error' | 'timeout', key?: string) => ({
  limit,
  kind,
  error: new Error(kind),
  action: 'deny' as const,
  key,
});

/** The updates of a limit's first event that precede the event's own. */
const zeros = (limit: string) => [
  ...DECISION_OUTCOMES.map((outcome) => `decisions ${limit} ${outcome} +0`),
  `storeErrors ${limit} store-error +0`,
  `storeErrors ${limit} timeout +0`,
];

describe('createMetricsModel', () => {
  it('turns a known sequence of events into exactly these updates', () => {
    const { model, updates } = recordingModel();
    model.decision(decision('api', 'allowed', { storeMs: 0.5 }));
    model.decision(decision('api', 'delayed', { delayMs: 250, storeMs: 2 }));
    model.decision(decision('api', 'denied', { reason: 'deny-cache' }));
    model.storeError(storeError('login', 'timeout'));
    model.circuit({ limit: 'login', state: 'open', domain: undefined, reason: 'timeout' });
    model.circuit({ limit: 'login', state: 'open', domain: undefined, reason: 'timeout' });
    model.circuit({ limit: 'login', state: 'closed', domain: undefined, reason: undefined });
    model.circuit({ limit: 'login', state: 'closed', domain: undefined, reason: undefined });
    model.hold({ limit: 'api', state: 'started', delayMs: 250 });
    model.hold({ limit: 'api', state: 'ended', delayMs: 250 });
    model.hold({ limit: 'api', state: 'started', delayMs: 250 });
    model.hold({ limit: 'api', state: 'abandoned', delayMs: 250 });
    model.reservationCancelled({ limit: 'api', cost: 3 });
    expect(updates).toEqual([
      ...zeros('api'),
      'decisions api allowed +1',
      'storeDuration api = 0.0005',
      'decisions api delayed +1',
      'delay api = 0.25',
      'storeDuration api = 0.002',
      // A deny-cache answer: no store call to time.
      'decisions api denied +1',
      ...zeros('login'),
      'storeErrors login timeout +1',
      'circuitTransitions login open +1',
      'circuitsOpen login +1',
      // The repeated open is a transition reported again, not a second open circuit.
      'circuitTransitions login open +1',
      'circuitTransitions login closed +1',
      'circuitsOpen login -1',
      'circuitTransitions login closed +1',
      'heldRequests api +1',
      'heldRequests api -1',
      'heldRequests api +1',
      'heldRequests api -1',
      'holdsAbandoned api +1',
      'reservationsCancelled api +1',
    ]);
  });

  // Each kind of event of limit `api`, and the updates of its own that follow the zeros.
  it.each<[kind: string, send: (model: Required<Observer>) => void, own: string[]]>([
    ['a decision', (model) => model.decision(decision('api', 'allowed')), ['decisions api allowed +1']],
    ['a store error', (model) => model.storeError(storeError('api', 'timeout')), ['storeErrors api timeout +1']],
    [
      'a circuit event',
      (model) => model.circuit({ limit: 'api', state: 'open', domain: undefined, reason: 'timeout' }),
      ['circuitTransitions api open +1', 'circuitsOpen api +1'],
    ],
    ['a hold', (model) => model.hold({ limit: 'api', state: 'started', delayMs: 1 }), ['heldRequests api +1']],
    [
      'a cancelled reservation',
      (model) => model.reservationCancelled({ limit: 'api', cost: 1 }),
      ['reservationsCancelled api +1'],
    ],
    [
      'lease units',
      (model) => model.leaseUnits({ limit: 'api', action: 'leased', units: 5 }),
      ['leaseUnits api leased +5'],
    ],
    [
      'a settlement',
      (model) => model.settled({ limit: 'api', action: 'returned', units: 2, estimate: 3, actual: 1 }),
      ['settledUnits api returned +2'],
    ],
  ])(
    'records every outcome and both error types of a limit as 0 at its first event of any kind (%s), once',
    (_kind, send, own) => {
      const { model, updates } = recordingModel();
      send(model);
      expect(updates).toEqual([...zeros('api'), ...own]);
      // The limit's next event brings no zeros; another limit's first brings its own.
      model.hold({ limit: 'api', state: 'ended', delayMs: 1 });
      model.reservationCancelled({ limit: 'search', cost: 1 });
      expect(updates.slice(zeros('api').length + own.length)).toEqual([
        'heldRequests api -1',
        ...zeros('search'),
        'reservationsCancelled search +1',
      ]);
    },
  );

  it('counts each failure domain’s circuit once in the open gauge, however often it is reported', () => {
    const { model, updates } = recordingModel();
    const gauge = () => updates.filter((update) => update.startsWith('circuitsOpen'));
    // Each event of the limit, and what it moves the gauge by (none: a domain already open, or not open).
    const steps: [state: 'open' | 'closed', domain: string | undefined, change: '+1' | '-1' | 'none'][] = [
      ['open', '10.0.0.1:7000', '+1'],
      ['open', '10.0.0.1:7000', 'none'],
      ['open', '10.0.0.2:7001', '+1'],
      ['open', undefined, '+1'],
      ['closed', '10.0.0.1:7000', '-1'],
      ['closed', '10.0.0.1:7000', 'none'],
      ['closed', '10.0.0.3:7002', 'none'],
      // Domain undefined is '': its closed event closes it.
      ['closed', '', '-1'],
      ['closed', '10.0.0.2:7001', '-1'],
    ];
    steps.forEach(([state, domain, change], i) => {
      const before = gauge().length;
      model.circuit({ limit: 'api', state, domain, reason: state === 'open' ? 'store-error' : undefined });
      const expected = change === 'none' ? [] : [`circuitsOpen api ${change}`];
      expect(gauge().slice(before), `step ${i} (${state} ${domain})`).toEqual(expected);
    });
  });

  it('binds each series once per limit and label value, however many events follow', () => {
    const { model, bound } = recordingModel();
    for (let i = 0; i < 300; i++) {
      model.decision(
        decision(i % 2 ? 'api' : 'login', DECISION_OUTCOMES[i % DECISION_OUTCOMES.length]!, {
          delayMs: i % 3,
          storeMs: 1,
        }),
      );
      model.storeError(storeError('api', i % 2 ? 'timeout' : 'store-error'));
      model.circuit({ limit: 'api', state: i % 2 ? 'open' : 'closed', domain: undefined, reason: undefined });
    }
    const perLimit =
      // An adaptive limit's gauges are bound by its own events, not by a limit's.
      Object.values(INSTRUMENTS).filter((i) => i.labels.length === 1 && !i.id.startsWith('adaptive')).length +
      DECISION_OUTCOMES.length +
      2;
    expect(bound).toHaveLength(2 * perLimit + 2);
    expect(new Set(bound).size).toBe(bound.length);
  });

  it('counts an outcome a newer core adds under its own value', () => {
    const { model, updates } = recordingModel();
    model.decision(decision('api', 'queued' as DecisionOutcome));
    model.decision(decision('api', 'queued' as DecisionOutcome));
    expect(updates.filter((update) => update.includes('queued'))).toEqual([
      'decisions api queued +1',
      'decisions api queued +1',
    ]);
  });

  it('never reads the key', () => {
    const { model, bound } = recordingModel();
    model.decision(decision('api', 'denied', { key: 'alice@example.com' }));
    model.storeError(storeError('api', 'store-error', 'alice@example.com'));
    expect(bound.join()).not.toContain('alice');
  });
});

describe('createMetricsModel: an adaptive limit', () => {
  it('brings its gauges to each event state, sets its latency readings when they change, and counts work per class and outcome', () => {
    const { sink, updates } = recordingSink();
    const model = createMetricsModel(sink);
    const event = (kind: AdaptiveConcurrencyEvent['kind'], more: Partial<AdaptiveConcurrencyEvent>) =>
      model.adaptive({
        limit: 'db',
        kind,
        priority: 'sheddable',
        permits: 20,
        inFlight: 1,
        minLatencyMs: undefined,
        latencyMs: undefined,
        ...more,
      });
    event('admitted', {});
    event('shed', {});
    event('limit', { priority: undefined, permits: 10, inFlight: 0, minLatencyMs: 2000, latencyMs: 2500 });
    event('failed', { permits: 10, inFlight: 0, minLatencyMs: 2000 });
    event('limit', { priority: undefined, permits: 12, inFlight: 0, minLatencyMs: 2000, latencyMs: 1500 });
    expect(updates).toEqual([
      'adaptiveLimit db +20',
      'adaptiveInFlight db +1',
      'adaptiveWork db sheddable admitted +1',
      'adaptiveWork db sheddable shed +1',
      'adaptiveLimit db -10',
      'adaptiveInFlight db -1',
      'adaptiveMinLatency db := 2',
      'adaptiveLatency db := 2.5',
      'adaptiveWork db sheddable failed +1',
      // A count moves by the difference; a latency is set to its value (a sum of latencies means nothing).
      'adaptiveLimit db +2',
      'adaptiveLatency db := 1.5',
    ]);
  });
});
