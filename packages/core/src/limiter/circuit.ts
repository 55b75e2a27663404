import type { Clock } from '../clock.js';

/** Why the store was given up on: it failed, or it did not answer within the timeout. */
export type FailureReason = 'store-error' | 'timeout';

/** The gate says: call the store (the circuit is closed). */
export const CALL_STORE = 0;
/** The gate says: call the store as the one probe of an open circuit. */
export const PROBE_STORE = 1;
/** The gate says: skip the store, the failure policy decides. */
export const SKIP_STORE = 2;
export type StoreGate = typeof CALL_STORE | typeof PROBE_STORE | typeof SKIP_STORE;

/** Hears a circuit open (with the failure's reason) or close again. */
export type CircuitListener = (open: boolean, reason: FailureReason | undefined, domain: string | undefined) => void;

/**
 * The "store down" circuit of one limiter. Closed, every call goes to the store. It opens when
 * `threshold` failed calls fall within `retryIntervalMs` (a lone slow answer under load does not deny
 * every key for an interval), counting only the calls the store has not proved it outlived: a failed
 * call sent before a call the domain answered in time is that call's own failure (its key's:
 * while a Cluster slot migrates, the calls of the keys being moved time out as the others are
 * answered, and those calls get the policy while the bystanders keep their store). While open, calls skip the store until the open time has passed, then
 * one call at a time goes to the store as a probe (which moves the open time on by `retryIntervalMs`,
 * so a hung probe is replaced by another). A probe's success closes the circuit; its failure keeps it
 * open for another interval.
 *
 * Times are read from `clock` (milliseconds); nothing here schedules a timer.
 */
export class Circuit {
  /** 0 while closed; otherwise the time until which calls skip the store. */
  private openUntil = 0;
  private openReason: FailureReason = 'store-error';
  /** Times of the latest failed calls (at most `threshold`), oldest first. */
  private readonly failures: number[] = [];
  /** The latest time a call was sent that the domain answered in time (on `clock`). */
  private aliveAt = -Infinity;

  /** Told when the circuit opens or closes (set by an observed limiter); undefined: nobody listens. */
  listener: CircuitListener | undefined;

  /** `domain`: the failure domain this circuit guards, for the listener (undefined: the whole store). */
  constructor(
    private readonly clock: Clock,
    private readonly retryIntervalMs: number,
    private readonly threshold: number,
    private readonly domain?: string,
  ) {}

  /** True while every call goes to the store (the cheap check of the fast paths). */
  get isClosed(): boolean {
    return this.openUntil === 0;
  }

  /** The reason of the failure that opened the circuit, repeated by the decisions taken while it is open. */
  get reason(): FailureReason {
    return this.openReason;
  }

  /**
   * Whether a call may go to the store now: always while closed; one probe per retry interval while
   * open. A clock stepped back past the opening (an NTP step, a resumed VM) probes at once rather than
   * waiting as long as the step: the wait is at most one interval whatever the clock did.
   */
  gate(): StoreGate {
    if (this.openUntil === 0) return CALL_STORE;
    const now = this.clock();
    if (this.openUntil > now && this.openUntil - now <= this.retryIntervalMs) return SKIP_STORE;
    this.openUntil = now + this.retryIntervalMs;
    return PROBE_STORE;
  }

  /** The time on this circuit's clock: a call's send time, for {@link answered} and {@link failed}. */
  now(): number {
    return this.clock();
  }

  /** A call sent at `sentAt` was answered in time: the domain was alive then. */
  answered(sentAt: number): void {
    if (sentAt > this.aliveAt) this.aliveAt = sentAt;
  }

  /** The probe answered: the store is used again, and earlier failures are forgotten. */
  probeSucceeded(): void {
    const wasOpen = this.openUntil !== 0;
    this.openUntil = 0;
    this.failures.length = 0;
    if (wasOpen) this.listener?.(false, undefined, this.domain);
  }

  /**
   * A store call sent at `sentAt` (default: now) failed: opens the circuit at the threshold, and keeps
   * an open one open (a failed probe). A call sent before one the domain answered is not counted
   * (see the class comment).
   */
  failed(reason: FailureReason, sentAt?: number): void {
    const now = this.clock();
    if (this.openUntil === 0 && sentAt !== undefined && sentAt < this.aliveAt) return;
    const failures = this.failures;
    failures.push(now);
    if (failures.length > this.threshold) failures.shift();
    if (this.openUntil !== 0 || (failures.length === this.threshold && now - failures[0]! <= this.retryIntervalMs)) {
      const opened = this.openUntil === 0;
      this.openUntil = now + this.retryIntervalMs;
      this.openReason = reason;
      if (opened) this.listener?.(true, reason, this.domain);
    }
  }
}

/** At most this many circuits per limiter (a Cluster has at most 16384 slots, hence at most as many masters). */
export const MAX_DOMAINS = 16_384;

/**
 * One {@link Circuit} per failure domain of a store (see `Store.failureDomain`): a Cluster node that
 * fails opens only its own circuit. Created on a domain's first call and kept; bounded by
 * {@link MAX_DOMAINS} (past it the oldest is forgotten: domains that no longer serve keys, such as
 * nodes replaced by failovers, are the oldest).
 */
export class Circuits {
  private readonly byDomain = new Map<string | number, Circuit>();
  /** Given to every circuit, present and future (see {@link Circuit.listener}). */
  private circuitListener: CircuitListener | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly retryIntervalMs: number,
    private readonly threshold: number,
  ) {}

  /** The circuit of `domain`. */
  of(domain: string | number): Circuit {
    let circuit = this.byDomain.get(domain);
    if (circuit === undefined) {
      if (this.byDomain.size >= MAX_DOMAINS) this.byDomain.delete(this.byDomain.keys().next().value!);
      circuit = new Circuit(this.clock, this.retryIntervalMs, this.threshold, String(domain));
      circuit.listener = this.circuitListener;
      this.byDomain.set(domain, circuit);
    }
    return circuit;
  }

  /** Tells `listener` of every circuit's transitions. */
  set listener(listener: CircuitListener | undefined) {
    this.circuitListener = listener;
    for (const circuit of this.byDomain.values()) circuit.listener = listener;
  }

  /** How many domains have a circuit. */
  get size(): number {
    return this.byDomain.size;
  }
}

/**
 * The circuit of a limiter, and for a store with failure domains one per domain (without, the one
 * circuit: no lookup per call); both tell `listener` of their transitions.
 */
export function circuitsOf(
  config: { localClock: Clock; retryIntervalMs: number; failureThreshold: number; store: { failureDomain?: unknown } },
  listener: CircuitListener,
): { circuit: Circuit; byDomain: Circuits | undefined } {
  const circuit = new Circuit(config.localClock, config.retryIntervalMs, config.failureThreshold);
  circuit.listener = listener;
  if (typeof config.store.failureDomain !== 'function') return { circuit, byDomain: undefined };
  const byDomain = new Circuits(config.localClock, config.retryIntervalMs, config.failureThreshold);
  byDomain.listener = listener;
  return { circuit, byDomain };
}
