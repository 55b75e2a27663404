import type { InstrumentId, LabelId, Observer } from '@rl/core';
import { decisionEvent } from '@rl/core/testing';

/** A decision event with the defaults of a plain store answer: `@rl/core/testing`'s, where the exporters' tests have it from. */
export { decisionEvent };

/**
 * One series the metrics exporters (`@rl/prometheus`, `@rl/opentelemetry`) must show after
 * {@link feedObserverScenario}, named by the ids of `@rl/core`'s instrument table (`INSTRUMENTS`,
 * `LABEL_NAMES`); each exporter's test maps them to its own names.
 */
export interface ExpectedSeries {
  readonly instrument: Extract<
    InstrumentId,
    | 'decisions'
    | 'storeErrors'
    | 'circuitTransitions'
    | 'circuitsOpen'
    | 'heldRequests'
    | 'holdsAbandoned'
    | 'leaseUnits'
  >;
  readonly labels: { readonly limit: string } & { readonly [label in Exclude<LabelId, 'limit'>]?: string };
  readonly value: number;
}

/**
 * Feeds the exporters' known sequence: limit `api` makes 3 allowed decisions (the store answered in
 * 0.2, 0.8 and 3 ms), 2 denied (0.4 ms, and one from the deny cache), 1 delayed by 250 ms (0.3 ms);
 * limit `login`'s store times out twice and fails once, its policy fails open twice and closed once,
 * and its circuit opens (reported twice); `api` holds 3 requests: 1 ends, 1 is abandoned; its quota
 * leases take 2 blocks of 50 units and give 30 back. The counts
 * it must come to are {@link OBSERVER_SCENARIO_SERIES}.
 */
export function feedObserverScenario(observer: Required<Observer>): void {
  const store = [0.2, 0.8, 3];
  for (const storeMs of store) observer.decision(decisionEvent('api', 'allowed', { storeMs }));
  observer.decision(decisionEvent('api', 'denied', { storeMs: 0.4 }));
  observer.decision(decisionEvent('api', 'denied', { reason: 'deny-cache' }));
  observer.decision(decisionEvent('api', 'delayed', { delayMs: 250, storeMs: 0.3 }));
  for (const kind of ['timeout', 'timeout', 'store-error'] as const) {
    observer.storeError({
      limit: 'login',
      kind,
      error: new Error(kind),
      action: kind === 'timeout' ? 'allow' : 'deny',
      key: undefined,
    });
  }
  for (const outcome of ['failed_open', 'failed_open', 'failed_closed'] as const) {
    observer.decision(
      decisionEvent('login', outcome, { reason: outcome === 'failed_open' ? 'timeout' : 'store-error' }),
    );
  }
  for (let i = 0; i < 2; i++)
    observer.circuit({ limit: 'login', state: 'open', domain: '10.0.0.1:7000', reason: 'timeout' });
  for (const state of ['started', 'started', 'started', 'ended', 'abandoned'] as const)
    observer.hold({ limit: 'api', state, delayMs: 250 });
  for (const [action, units] of [
    ['leased', 50],
    ['leased', 50],
    ['returned', 30],
  ] as const)
    observer.leaseUnits({ limit: 'api', action, units });
}

/** The name of each {@link ExpectedSeries.instrument} in each exporter. */
export const EXPORTED_NAMES: Readonly<
  Record<ExpectedSeries['instrument'], { readonly prometheus: string; readonly openTelemetry: string }>
> = {
  decisions: { prometheus: 'rl_decisions_total', openTelemetry: 'rl.decisions' },
  storeErrors: { prometheus: 'rl_store_errors_total', openTelemetry: 'rl.store.errors' },
  circuitTransitions: { prometheus: 'rl_circuit_transitions_total', openTelemetry: 'rl.circuit.transitions' },
  circuitsOpen: { prometheus: 'rl_circuits_open', openTelemetry: 'rl.circuits.open' },
  heldRequests: { prometheus: 'rl_held_requests', openTelemetry: 'rl.held_requests' },
  holdsAbandoned: { prometheus: 'rl_holds_abandoned_total', openTelemetry: 'rl.holds.abandoned' },
  leaseUnits: { prometheus: 'rl_lease_units_total', openTelemetry: 'rl.lease.units' },
};

/** What {@link feedObserverScenario} comes to (zeros: the series an exporter creates at a limit's first event). */
export const OBSERVER_SCENARIO_SERIES: readonly ExpectedSeries[] = [
  { instrument: 'decisions', labels: { limit: 'api', outcome: 'allowed' }, value: 3 },
  { instrument: 'decisions', labels: { limit: 'api', outcome: 'denied' }, value: 2 },
  { instrument: 'decisions', labels: { limit: 'api', outcome: 'delayed' }, value: 1 },
  { instrument: 'decisions', labels: { limit: 'api', outcome: 'failed_open' }, value: 0 },
  { instrument: 'decisions', labels: { limit: 'login', outcome: 'failed_open' }, value: 2 },
  { instrument: 'decisions', labels: { limit: 'login', outcome: 'failed_closed' }, value: 1 },
  { instrument: 'decisions', labels: { limit: 'login', outcome: 'allowed' }, value: 0 },
  { instrument: 'storeErrors', labels: { limit: 'login', errorType: 'timeout' }, value: 2 },
  { instrument: 'storeErrors', labels: { limit: 'login', errorType: 'store-error' }, value: 1 },
  { instrument: 'storeErrors', labels: { limit: 'api', errorType: 'timeout' }, value: 0 },
  { instrument: 'circuitTransitions', labels: { limit: 'login', circuitState: 'open' }, value: 2 },
  { instrument: 'circuitsOpen', labels: { limit: 'login' }, value: 1 },
  { instrument: 'heldRequests', labels: { limit: 'api' }, value: 1 },
  { instrument: 'holdsAbandoned', labels: { limit: 'api' }, value: 1 },
  { instrument: 'leaseUnits', labels: { limit: 'api', leaseAction: 'leased' }, value: 100 },
  { instrument: 'leaseUnits', labels: { limit: 'api', leaseAction: 'returned' }, value: 30 },
];
