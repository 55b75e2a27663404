import type { DecisionReason } from '../decision.js';

/**
 * What one decision came to, as metrics count it:
 * - `allowed`: admitted at once; `delayed`: admitted after a wait (`delayMs > 0`: a shaping limit, a
 *   reservation); `denied`: refused by the limit (the store, or the deny cache remembering the store);
 * - `dry_run_denied`: a dry-run limit would have refused it, and it went on;
 * - the failure policy's, when the store failed, timed out or its circuit is open: `failed_open`
 *   (admitted without the store), `failed_closed` (refused without the store), `fallback` (decided by
 *   the fallback limiter).
 */
export type DecisionOutcome =
  'allowed' | 'delayed' | 'denied' | 'dry_run_denied' | 'failed_open' | 'failed_closed' | 'fallback';

/** Every {@link DecisionOutcome}, for exporters that declare their label values up front. */
export const DECISION_OUTCOMES: readonly DecisionOutcome[] = [
  'allowed',
  'delayed',
  'denied',
  'dry_run_denied',
  'failed_open',
  'failed_closed',
  'fallback',
];

/**
 * One decision of one limit. The object may be reused for the next event of the same limit: read it
 * during the call, copy what you keep.
 */
export interface DecisionEvent {
  /** The limit's name: a limiter's `name` option, or the middleware limit's name. Bounded: a label value. */
  readonly limit: string;
  readonly outcome: DecisionOutcome;
  /** Why the decision was not the store's own (`deny-cache`, `timeout`, `store-error`, `fallback`); undefined when it was. */
  readonly reason: DecisionReason | undefined;
  /** Units the request asked for (1 for a permit). */
  readonly cost: number;
  /** Milliseconds the admitted request waits before it proceeds (0 unless `delayed`). */
  readonly delayMs: number;
  /**
   * Milliseconds the store call took, from the call to its answer, when one was made and answered
   * (undefined for a deny-cache answer, a circuit-open decision, a timeout). Measured with the
   * limiter's timers (`performance.now()` by default).
   */
  readonly storeMs: number | undefined;
  /** The request's key (without the limiter's prefix): only with `observeKeys: true`; otherwise undefined (keys are personal data, and unbounded). */
  readonly key: string | undefined;
  /**
   * An idempotent charge (`idempotencyKey`): `replayed` when the store answered an earlier admitting
   * decision again (nothing charged), `conflict` when its id was remembered with another fingerprint
   * (charged as new); undefined otherwise.
   */
  readonly idempotency: 'replayed' | 'conflict' | undefined;
}

/** A store call failed or timed out (also the calls whose failure changes no decision: give-backs, releases, resets). */
export interface StoreErrorObservation {
  readonly limit: string;
  /** `timeout` when the store did not answer within the limiter's `timeout`, `store-error` otherwise. */
  readonly kind: 'store-error' | 'timeout';
  readonly error: Error;
  /** What the limiter did about the request: `deny`, `allow` or `fallback` (`deny` for calls that decide nothing). */
  readonly action: 'deny' | 'allow' | 'fallback';
  /** The key, only with `observeKeys: true`. */
  readonly key: string | undefined;
}

/**
 * The store-down circuit of a limit (of one failure domain of its store: a Cluster master) opened
 * (calls skip the store and the failure policy decides) or closed again (a probe succeeded).
 */
export interface CircuitEvent {
  readonly limit: string;
  readonly state: 'open' | 'closed';
  /** The failure domain (`host:port` of a Cluster master); undefined for a store that is one domain. */
  readonly domain: string | undefined;
  /** Why it opened (for `open`). */
  readonly reason: 'store-error' | 'timeout' | undefined;
}

/**
 * A request held by the HTTP layer before it proceeds (shaping, waiting for a reservation):
 * `started` when the hold begins, then `ended` when it proceeds or `abandoned` when its client left
 * meanwhile (what it took is given back). Their difference is the number of requests held now.
 */
export interface HoldEvent {
  /** The middleware's limit that delays the request the longest. */
  readonly limit: string;
  readonly state: 'started' | 'ended' | 'abandoned';
  readonly delayMs: number;
}

/** A reservation was cancelled before its slot (`limiter.reserve(…).cancel()`, or a held request given up): its units were given back. */
export interface ReservationCancelledEvent {
  readonly limit: string;
  /** The units the reservation had taken. */
  readonly cost: number;
}

/**
 * Units of a limit's shared quota taken by a quota lease (`leased`: a block charged in the store) or
 * given back to it (`returned`: unused at the lease's ttl, at `close()`, or once the quota was gone).
 * Units spent from a block are told as decisions, one per request.
 */
export interface LeaseUnitsEvent {
  readonly limit: string;
  readonly action: 'leased' | 'returned';
  readonly units: number;
}

/**
 * A charge settled at the request's real cost (`limiter.settle`, `actualCost`, `result.settle(n)`):
 * `estimate` units were charged on arrival, the request cost `actual`; the difference was charged
 * (`charged`, `actual > estimate`) or given back (`returned`), `units` being its size (above 0). What
 * the store applies may be less: a give-back never raises a balance above what it would be without
 * the charge, a charge stops at `maxDebt`.
 */
export interface SettledEvent {
  readonly limit: string;
  readonly action: 'charged' | 'returned';
  readonly units: number;
  readonly estimate: number;
  readonly actual: number;
}

/**
 * What an adaptive concurrency limit did (`adaptiveConcurrency`, a middleware's `adaptive` option):
 * `admitted` or `shed` one piece of work of class `priority`; `released` it (its latency in
 * `latencyMs`) or `failed` (released failed, or never released within `maxHold`); `limit`: a window
 * changed the limit or a probe measured the baseline (`latencyMs`: the window's median). Each event
 * carries the state after it: permits, in flight, the baseline.
 */
export interface AdaptiveConcurrencyEvent {
  /** The adaptive limit's name (a middleware's: `adaptive`). */
  readonly limit: string;
  readonly kind: 'admitted' | 'shed' | 'released' | 'failed' | 'limit';
  /** The class of the work (`critical`, `normal`, `sheddable`, `share-0.7`); undefined for `limit`. */
  readonly priority: string | undefined;
  /** The limit now, in permits. */
  readonly permits: number;
  /** Permits held now. */
  readonly inFlight: number;
  /** The baseline (the backend's unloaded latency, ms); undefined before the first probe ended. */
  readonly minLatencyMs: number | undefined;
  /** `released`: this work's latency in ms; `limit`: the window's median; undefined otherwise. */
  readonly latencyMs: number | undefined;
}

/**
 * Hears what the limits do: give one as the `observer` option of `createLimiter`, `combineLimiters` or
 * a middleware. Every method is optional, and may be `async`. An observer that throws, or whose
 * returned promise rejects, never breaks a request nor the process: the error is reported once per
 * observer (a process warning, `RL_OBSERVER_ERROR`) and the request goes on; a returned promise is
 * not awaited.
 * Without an observer, nothing is measured or built; an observer without `decision` costs a decision
 * nothing (no event, no clock read); one with `storeDurations: false` costs no clock read.
 */
export interface Observer {
  /** One event per decision of each limit (a composition of three limits: up to three events). */
  decision?(event: DecisionEvent): void;
  /**
   * Whether this observer reads `DecisionEvent.storeMs` (default true). `false`: its events carry
   * `storeMs: undefined`, and when no observer of the limiter reads it the limiter times no store call
   * (two clock reads per decision saved). Read once, when the observer is added.
   */
  readonly storeDurations?: boolean;
  storeError?(event: StoreErrorObservation): void;
  circuit?(event: CircuitEvent): void;
  hold?(event: HoldEvent): void;
  reservationCancelled?(event: ReservationCancelledEvent): void;
  leaseUnits?(event: LeaseUnitsEvent): void;
  settled?(event: SettledEvent): void;
  /** What an adaptive concurrency limit did (see {@link AdaptiveConcurrencyEvent}). */
  adaptive?(event: AdaptiveConcurrencyEvent): void;
}
