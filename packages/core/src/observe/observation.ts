import type { Decision } from '../decision.js';
import type { ChargeAnswer } from '../limiter/charge-path.js';
import { InvalidOptionError, errorDocsUrl } from '../errors.js';
import type { DecisionEvent, DecisionOutcome, HoldEvent, LeaseUnitsEvent, Observer } from './observer.js';
import { emitWarning } from '../runtime.js';

/** How an observer hears one limit, as the limiter's core takes it. */
export interface ObservedAs {
  /** The limit's name in its events. */
  readonly limit: string;
  /** The request's key in its events. */
  readonly keys: boolean;
  /** The limit's denials are not enforced (a dry-run limit of the HTTP layer): it hears them as `dry_run_denied`. */
  readonly dryRun: boolean;
  /** Where the observer was given, for the error of a bad one. */
  readonly field: string;
}

/** How one observer hears one limiter. */
export interface ObserveOptions {
  /** The limit's name in the events (default: the limiter's `name`). */
  readonly name?: string;
  /** Put the request's key (without the limiter's prefix) in the events. Default false: keys are personal data, and unbounded. */
  readonly keys?: boolean;
}

/** A decision event the observation fills in for each decision (one object per observer and limiter, reused). */
type MutableDecisionEvent = { -readonly [K in keyof DecisionEvent]: DecisionEvent[K] };

interface Entry {
  readonly observer: Observer;
  readonly limit: string;
  readonly keys: boolean;
  readonly dryRun: boolean;
  /** Its events carry the store's duration (the observer's `storeDurations` is not false). */
  readonly durations: boolean;
}

/** An entry whose observer hears decisions, with its event (one object, filled in for each decision). */
interface Decider extends Entry {
  readonly event: MutableDecisionEvent;
}

/** Observers that threw once already (warned about once per observer, process-wide). */
const warned = new WeakSet<Observer>();

/**
 * The observers of one limiter: what it tells them, and the guard that keeps an observer's throw, or
 * the rejection of the promise an `async` observer returns, from breaking a request (reported once per
 * observer as a process warning, `RL_OBSERVER_ERROR`).
 */
export class Observation {
  private readonly entries: Entry[] = [];
  /** The entries whose observer has `decision`: the only ones a decision visits. */
  private readonly deciders: Decider[] = [];
  /** Some observer of decisions reads `storeMs` (see {@link wantsDurations}). */
  private timed = false;

  constructor(private readonly keyPrefixLength: number) {}

  /** Some observer hears decisions: the limiter's charge path then has an observation stage. */
  get hearsDecisions(): boolean {
    return this.deciders.length > 0;
  }

  /** Some observer of decisions reads `storeMs` (its `storeDurations` is not false): only then is a store call timed. */
  get wantsDurations(): boolean {
    return this.timed;
  }

  /** Adds `observer` (checked: an object whose given methods are functions), heard as `as` says. */
  add(observer: unknown, as: ObservedAs): void {
    const { limit, keys, dryRun, field } = as;
    checkObserver(observer, field);
    const entry: Entry = { observer, limit, keys, dryRun, durations: observer.storeDurations !== false };
    this.entries.push(entry);
    if (observer.decision === undefined) return;
    const event: MutableDecisionEvent = {
      limit,
      outcome: 'allowed',
      reason: undefined,
      cost: 0,
      delayMs: 0,
      storeMs: undefined,
      key: undefined,
      idempotency: undefined,
    };
    this.deciders.push({ ...entry, event });
    this.timed ||= entry.durations;
  }

  /**
   * The answer to one charge of `cost` units for `storeKey`; `storeMs` when the store answered it and
   * {@link wantsDurations} (undefined otherwise). Visits only the observers with `decision`, each
   * event filled in place (no object per decision).
   */
  decision(charged: ChargeAnswer, cost: number, storeMs: number | undefined, storeKey: string): void {
    const decision = charged.decision;
    const deciders = this.deciders;
    for (let i = 0; i < deciders.length; i++) {
      const entry = deciders[i]!;
      const observer = entry.observer;
      const event = entry.event;
      event.outcome = outcomeOf(decision, entry.dryRun);
      event.reason = decision.reason;
      event.cost = cost;
      event.delayMs = decision.delayMs;
      event.storeMs = entry.durations ? storeMs : undefined;
      event.key = entry.keys ? storeKey.slice(this.keyPrefixLength) : undefined;
      event.idempotency = charged.took === 'replayed' ? 'replayed' : charged.conflict === true ? 'conflict' : undefined;
      // Inline, not through `guard`: no closure per decision.
      try {
        const returned: unknown = observer.decision!(event);
        if (returned !== undefined) settled(observer, returned);
      } catch (error) {
        reportObserverError(observer, error);
      }
    }
  }

  /** A store call failed or timed out. */
  storeError(
    error: Error,
    kind: 'store-error' | 'timeout',
    action: 'deny' | 'allow' | 'fallback',
    storeKey: string,
  ): void {
    for (const entry of this.entries) {
      const report = entry.observer.storeError;
      if (report === undefined) continue;
      const key = entry.keys ? storeKey.slice(this.keyPrefixLength) : undefined;
      this.guard(entry.observer, () => report.call(entry.observer, { limit: entry.limit, kind, error, action, key }));
    }
  }

  /** The store-down circuit of `domain` (undefined: the whole store) opened or closed. */
  circuit(open: boolean, reason: 'store-error' | 'timeout' | undefined, domain: string | undefined): void {
    for (const entry of this.entries) {
      const report = entry.observer.circuit;
      if (report === undefined) continue;
      this.guard(entry.observer, () =>
        report.call(entry.observer, {
          limit: entry.limit,
          state: open ? 'open' : 'closed',
          domain,
          reason: open ? reason : undefined,
        }),
      );
    }
  }

  /** A reservation of `cost` units was cancelled before its slot (its units given back). */
  reservationCancelled(cost: number): void {
    for (const entry of this.entries) {
      const report = entry.observer.reservationCancelled;
      if (report === undefined) continue;
      this.guard(entry.observer, () => report.call(entry.observer, { limit: entry.limit, cost }));
    }
  }

  /** A quota lease took (`leased`) or gave back (`returned`) `units` of the shared quota. */
  leaseUnits(action: LeaseUnitsEvent['action'], units: number): void {
    for (const entry of this.entries) {
      const report = entry.observer.leaseUnits;
      if (report === undefined) continue;
      this.guard(entry.observer, () => report.call(entry.observer, { limit: entry.limit, action, units }));
    }
  }

  /** A charge of `estimate` units was settled at `actual` (they differ). */
  settled(estimate: number, actual: number): void {
    const action = actual > estimate ? 'charged' : 'returned';
    const units = Math.abs(actual - estimate);
    for (const entry of this.entries) {
      const report = entry.observer.settled;
      if (report === undefined) continue;
      this.guard(entry.observer, () =>
        report.call(entry.observer, { limit: entry.limit, action, units, estimate, actual }),
      );
    }
  }

  /** A request held by the HTTP layer for this limit (the one that delays it the longest) started, ended or was abandoned. */
  hold(state: HoldEvent['state'], delayMs: number): void {
    for (const entry of this.entries) {
      const report = entry.observer.hold;
      if (report === undefined) continue;
      this.guard(entry.observer, () => report.call(entry.observer, { limit: entry.limit, state, delayMs }));
    }
  }

  private guard(observer: Observer, call: () => unknown): void {
    try {
      settled(observer, call());
    } catch (error) {
      reportObserverError(observer, error);
    }
  }
}

/**
 * What an observer's method returned: nothing, or a thenable (an `async` method) whose rejection is
 * reported as a throw would be, once per observer, and never left unhandled (a process with
 * `--unhandled-rejections=strict`, Node's default `throw`, would end).
 */
function settled(observer: Observer, returned: unknown): void {
  if (returned === undefined || returned === null || typeof (returned as PromiseLike<unknown>).then !== 'function')
    return;
  (returned as PromiseLike<unknown>).then(undefined, (error: unknown) => reportObserverError(observer, error));
}

/** What a decision came to for metrics (see {@link DecisionOutcome}); `dryRun`: its denials were not enforced. */
export function outcomeOf(decision: Decision, dryRun: boolean): DecisionOutcome {
  const reason = decision.reason;
  if (reason === 'fallback') return 'fallback';
  if (reason === 'store-error' || reason === 'timeout') return decision.allowed ? 'failed_open' : 'failed_closed';
  if (!decision.allowed) return dryRun ? 'dry_run_denied' : 'denied';
  return decision.delayMs > 0 ? 'delayed' : 'allowed';
}

/** Reports an observer's throw once per observer; the request goes on. */
export function reportObserverError(observer: Observer, error: unknown): void {
  if (warned.has(observer)) return;
  warned.add(observer);
  const message = error instanceof Error ? error.message : String(error);
  emitWarning(
    `An rl observer threw (${message}); the request went on. Further errors of this observer are not reported. See ${errorDocsUrl('RL_OBSERVER_ERROR')}`,
    { code: 'RL_OBSERVER_ERROR' },
  );
}

/** `value` as an {@link Observer}: an object whose `decision`, `storeError`, `circuit`, `hold`, `reservationCancelled`, `leaseUnits` and `settled`, where given, are functions. */
export function checkObserver(value: unknown, field: string): asserts value is Observer {
  const expected =
    'an observer: an object with any of decision(event), storeError(event), circuit(event), hold(event), reservationCancelled(event), leaseUnits(event), settled(event), adaptive(event), such as prometheusObserver({ registry }) from @rl/prometheus';
  if (value === null || typeof value !== 'object') throw new InvalidOptionError(field, value, expected);
  for (const method of [
    'decision',
    'storeError',
    'circuit',
    'hold',
    'reservationCancelled',
    'leaseUnits',
    'settled',
    'adaptive',
  ] as const) {
    const member = (value as Record<string, unknown>)[method];
    if (member !== undefined && typeof member !== 'function')
      throw new InvalidOptionError(`${field}.${method}`, member, 'a function (or leave it out)');
  }
  const durations = (value as Observer).storeDurations;
  if (durations !== undefined && typeof durations !== 'boolean')
    throw new InvalidOptionError(`${field}.storeDurations`, durations, 'true or false (or leave it out: true)');
}
