import type { Attributes, Counter, Histogram, UpDownCounter } from '@opentelemetry/api';
import { DECISION_OUTCOMES, type CircuitEvent, type DecisionEvent, type HoldEvent, type Observer, type ReservationCancelledEvent, type StoreErrorObservation } from '@rl/core';
import { parseOptions, type OpenTelemetryConfig, type OpenTelemetryObserverOptions } from './options.js';

/** Attribute names. `error.type` is OpenTelemetry's own attribute for the class of an error. */
export const ATTRIBUTES = Object.freeze({ limit: 'rl.limit', outcome: 'rl.outcome', errorType: 'error.type', circuitState: 'rl.circuit.state' });

/** The instruments of one exporter. */
export interface RlInstruments {
  /** `rl.decisions` (`{decision}`): `rl.limit`, `rl.outcome`. */
  readonly decisions: Counter;
  /** `rl.delay` (`s`): delays above 0 of admitted requests; `rl.limit`. */
  readonly delay: Histogram;
  /** `rl.store.duration` (`s`): store calls that answered a decision; `rl.limit`. */
  readonly storeDuration: Histogram;
  /** `rl.store.errors` (`{error}`): `rl.limit`, `error.type` (`store-error` | `timeout`). */
  readonly storeErrors: Counter;
  /** `rl.held_requests` (`{request}`): requests held now; `rl.limit`. */
  readonly heldRequests: UpDownCounter;
  /** `rl.holds.abandoned` (`{request}`): held requests whose client left; `rl.limit`. */
  readonly holdsAbandoned: Counter;
  /** `rl.reservations.cancelled` (`{reservation}`): reservations cancelled before their slot; `rl.limit`. */
  readonly reservationsCancelled: Counter;
  /** `rl.circuit.transitions` (`{transition}`): `rl.limit`, `rl.circuit.state` (the state entered). */
  readonly circuitTransitions: Counter;
  /** `rl.circuits.open` (`{circuit}`): store-down circuits open now; `rl.limit`. */
  readonly circuitsOpen: UpDownCounter;
}

/** An {@link Observer} that records into OpenTelemetry instruments. */
export interface OpenTelemetryObserver extends Required<Observer> {
  readonly instruments: RlInstruments;
}

/** The attribute sets of one limit, made and frozen once: a decision allocates none. */
interface LimitAttributes {
  readonly limit: Attributes;
  readonly byOutcome: Map<string, Attributes>;
  readonly byErrorType: Map<string, Attributes>;
  readonly byCircuitState: Map<string, Attributes>;
  /** Failure domains of this limit whose circuit this exporter saw open (`''` for a store that is one domain). */
  readonly openDomains: Set<string>;
}

function createInstruments({ meter, prefix, delayBoundaries, storeBoundaries }: OpenTelemetryConfig): RlInstruments {
  const seconds = (boundaries: readonly number[]) => ({ unit: 's', advice: { explicitBucketBoundaries: [...boundaries] } });
  return {
    decisions: meter.createCounter(`${prefix}decisions`, { unit: '{decision}', description: 'Rate-limit decisions by limit and outcome.' }),
    delay: meter.createHistogram(`${prefix}delay`, { ...seconds(delayBoundaries), description: 'Delays of admitted requests that waited before they proceeded (only delays above 0).' }),
    storeDuration: meter.createHistogram(`${prefix}store.duration`, { ...seconds(storeBoundaries), description: 'Duration of the store calls that answered a decision.' }),
    storeErrors: meter.createCounter(`${prefix}store.errors`, { unit: '{error}', description: 'Store calls that failed (store-error) or did not answer in time (timeout).' }),
    heldRequests: meter.createUpDownCounter(`${prefix}held_requests`, { unit: '{request}', description: 'Requests held now by the HTTP layer before they proceed.' }),
    holdsAbandoned: meter.createCounter(`${prefix}holds.abandoned`, { unit: '{request}', description: 'Held requests whose client left before they proceeded.' }),
    reservationsCancelled: meter.createCounter(`${prefix}reservations.cancelled`, { unit: '{reservation}', description: 'Reservations cancelled before their slot (their units given back).' }),
    circuitTransitions: meter.createCounter(`${prefix}circuit.transitions`, { unit: '{transition}', description: 'Store-down circuits that opened or closed, by the state entered.' }),
    circuitsOpen: meter.createUpDownCounter(`${prefix}circuits.open`, { unit: '{circuit}', description: 'Store-down circuits open now.' }),
  };
}

/**
 * OpenTelemetry metrics of rl's limits, as an {@link Observer} for the `observer` option of
 * `createLimiter`, `combineLimiters` and the middlewares. The same instruments as `@rl/prometheus`,
 * named by OpenTelemetry's conventions: dotted names without units, the unit in `unit` (`s`, `{decision}`).
 *
 * - Attributes are bounded: `rl.limit`, `rl.outcome`, `error.type`, `rl.circuit.state`. The event's
 *   `key` is never read.
 * - `rl.delay` records only delays above 0 (the `delayed` outcome).
 * - At the first event of a limit, `rl.decisions` of every outcome and `rl.store.errors` of both
 *   types are recorded as 0, so the points exist before the first denial or error.
 * - Several exporters on one meter get the same instruments from the SDK and their values add up.
 */
export function openTelemetryObserver(options: OpenTelemetryObserverOptions): OpenTelemetryObserver {
  const instruments = createInstruments(parseOptions(options));
  const { decisions, delay, storeDuration, storeErrors, heldRequests, holdsAbandoned, reservationsCancelled, circuitTransitions, circuitsOpen } = instruments;
  const limits = new Map<string, LimitAttributes>();
  const attributesOf = (limit: string): LimitAttributes => limits.get(limit) ?? addLimit(limit);

  function addLimit(limit: string): LimitAttributes {
    const entry: LimitAttributes = {
      limit: Object.freeze({ [ATTRIBUTES.limit]: limit }),
      byOutcome: new Map(),
      byErrorType: new Map(),
      byCircuitState: new Map(),
      openDomains: new Set(),
    };
    limits.set(limit, entry);
    for (const outcome of DECISION_OUTCOMES) decisions.add(0, withValue(entry, entry.byOutcome, ATTRIBUTES.outcome, outcome));
    for (const type of ['store-error', 'timeout']) storeErrors.add(0, withValue(entry, entry.byErrorType, ATTRIBUTES.errorType, type));
    return entry;
  }

  /** The limit's attributes plus `name: value`, made on first use and kept. */
  function withValue(entry: LimitAttributes, cache: Map<string, Attributes>, name: string, value: string): Attributes {
    let attributes = cache.get(value);
    if (attributes === undefined) {
      attributes = Object.freeze({ ...entry.limit, [name]: value });
      cache.set(value, attributes);
    }
    return attributes;
  }

  return {
    instruments,
    decision(event: DecisionEvent): void {
      const entry = attributesOf(event.limit);
      decisions.add(1, entry.byOutcome.get(event.outcome) ?? withValue(entry, entry.byOutcome, ATTRIBUTES.outcome, event.outcome));
      if (event.delayMs > 0) delay.record(event.delayMs / 1000, entry.limit);
      if (event.storeMs !== undefined) storeDuration.record(event.storeMs / 1000, entry.limit);
    },
    storeError(event: StoreErrorObservation): void {
      const entry = attributesOf(event.limit);
      storeErrors.add(1, withValue(entry, entry.byErrorType, ATTRIBUTES.errorType, event.kind));
    },
    circuit(event: CircuitEvent): void {
      const entry = attributesOf(event.limit);
      circuitTransitions.add(1, withValue(entry, entry.byCircuitState, ATTRIBUTES.circuitState, event.state));
      // Counted from this exporter's set of open domains: a repeated event changes nothing.
      const domain = event.domain ?? '';
      const wasOpen = entry.openDomains.has(domain);
      if (event.state === 'open' && !wasOpen) entry.openDomains.add(domain);
      if (event.state === 'closed' && wasOpen) entry.openDomains.delete(domain);
      if ((event.state === 'open') !== wasOpen) circuitsOpen.add(wasOpen ? -1 : 1, entry.limit);
    },
    hold(event: HoldEvent): void {
      const entry = attributesOf(event.limit);
      heldRequests.add(event.state === 'started' ? 1 : -1, entry.limit);
      if (event.state === 'abandoned') holdsAbandoned.add(1, entry.limit);
    },
    reservationCancelled(event: ReservationCancelledEvent): void {
      reservationsCancelled.add(1, attributesOf(event.limit).limit);
    },
  };
}
