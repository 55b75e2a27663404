import type { Algorithm, AlgorithmKind, ConcurrencyAlgorithm, LeaseState } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { StoreError } from '../errors.js';
import type { Store, StoreCapabilities } from '../store/interface.js';
import { StepStore } from './step-store.js';

/**
 * A local store for testing what a limiter does with its store's answers: a {@link StepStore} (every
 * algorithm's own step, synchronous; `now` 0 when the limiter gives none) that records each call in
 * `calls` (`'consume <key>'`, …) and throws `failure` from every call while it is set (a store that
 * is down), or only from the calls for keys `failing` matches when that is set too. Given `domainOf`,
 * it has failure domains (`Store.failureDomain`), as a Cluster has nodes.
 */
export class LocalStore implements Store {
  readonly capabilities: StoreCapabilities;
  /** Thrown by every call while set. */
  failure: Error | undefined;
  /** Every call, in order: `'<operation> <key>'`. */
  readonly calls: string[] = [];
  /** The live leases of a key under a concurrency limit. */
  readonly leases: { get(key: string): LeaseState | undefined };
  /** Present when the store was given `domainOf`: the failure domain of a key (see `Store.failureDomain`). */
  readonly failureDomain?: (key: string, algorithm: Algorithm) => string | number;
  /** While set, calls for keys it matches throw `failure` too (a part of the store that is down). */
  failing: ((key: string) => boolean) | undefined;
  private readonly inner: StepStore;

  /** @param domainOf Gives the store failure domains: the domain of each (storage) key. */
  constructor(algorithms?: readonly AlgorithmKind[], domainOf?: (key: string) => string | number) {
    if (domainOf !== undefined) this.failureDomain = (key) => domainOf(key);
    const inner = new StepStore({ algorithms, clock: () => 0 });
    this.inner = inner;
    this.capabilities = { local: true, algorithms: inner.capabilities.algorithms, blocks: true, reservations: true };
    this.leases = { get: (key) => inner.leasesOf(key) };
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    this.record('consume', key);
    return this.inner.consume(key, algorithm, cost, now);
  }

  reserve(key: string, algorithm: Algorithm, cost: number, maxDelayMs: number, now: number | undefined): Decision {
    this.record('reserve', key);
    return this.inner.reserve(key, algorithm, cost, maxDelayMs, now);
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    this.record('peek', key);
    return this.inner.peek(key, algorithm, cost, now);
  }

  undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined, chargedAt?: number, delayMs?: number): void {
    this.record('undo', key);
    this.inner.undo(key, algorithm, cost, now, chargedAt, delayMs);
  }

  reset(key: string, algorithm: Algorithm): void {
    this.record('reset', key);
    this.inner.reset(key, algorithm);
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Decision {
    this.record('acquire', key);
    return this.inner.acquire(key, algorithm, leaseId, now);
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): void {
    this.record('release', key);
    this.inner.release(key, algorithm, leaseId);
  }

  private record(operation: string, key: string): void {
    this.calls.push(`${operation} ${key}`);
    if (this.failure !== undefined && (this.failing === undefined || this.failing(key))) throw this.failure;
  }
}

interface Pending {
  key: string;
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * A remote-like store for testing what a limiter does while its store is slow or failing: `consume`,
 * `peek`, `undo` and `acquire` wait until the test calls `answerAll()` (each is then applied, in
 * order, to a {@link LocalStore}, `state`) or `failAll()` (each rejects, by default with a
 * `StoreError`); `reset` and `release` apply at once, unless `holdResets` is set. `capabilities.local`
 * is false.
 */
export class ManualStore implements Store {
  readonly capabilities: StoreCapabilities;
  /** Calls waiting for an answer, oldest first. */
  readonly pending: Pending[] = [];
  /** How many calls have waited (answered or not). */
  calls = 0;
  /** The state the answered calls applied to. */
  readonly state: LocalStore;
  /** While true, `reset` waits for `answerAll()` / `failAll()` too (a store that hangs or fails on a reset). */
  holdResets = false;

  /** Present when the store was given `domainOf`: the failure domain of a key (see `Store.failureDomain`). */
  readonly failureDomain?: (key: string, algorithm: Algorithm) => string | number;

  /** @param domainOf Gives the store failure domains: the domain of each (storage) key. */
  constructor(algorithms?: readonly AlgorithmKind[], domainOf?: (key: string) => string | number) {
    if (domainOf !== undefined) this.failureDomain = (key) => domainOf(key);
    this.state = new LocalStore(algorithms);
    this.capabilities = { local: false, algorithms: this.state.capabilities.algorithms, blocks: true, reservations: true };
  }

  /** The live leases of a key under a concurrency limit. */
  get leases(): LocalStore['leases'] {
    return this.state.leases;
  }

  /** Answers every waiting call, in order. */
  answerAll(): void {
    for (const p of this.pending.splice(0)) {
      try {
        p.resolve(p.run());
      } catch (error) {
        p.reject(error as Error);
      }
    }
  }

  /** Fails every waiting call with `error` (a message becomes a `StoreError`). */
  failAll(error: Error | string = 'connection lost'): void {
    const reason = typeof error === 'string' ? new StoreError(error) : error;
    for (const p of this.pending.splice(0)) p.reject(reason);
  }

  /** Fails the waiting calls for keys `match` accepts, and answers the others, in order (a part of the store is down). */
  failWhere(match: (key: string) => boolean, error: Error | string = 'connection lost'): void {
    const reason = typeof error === 'string' ? new StoreError(error) : error;
    for (const p of this.pending.splice(0)) {
      if (match(p.key)) {
        p.reject(reason);
        continue;
      }
      try {
        p.resolve(p.run());
      } catch (failure) {
        p.reject(failure as Error);
      }
    }
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.later(key, () => this.state.consume(key, algorithm, cost, now));
  }

  reserve(key: string, algorithm: Algorithm, cost: number, maxDelayMs: number, now: number | undefined): Promise<Decision> {
    return this.later(key, () => this.state.reserve(key, algorithm, cost, maxDelayMs, now));
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.later(key, () => this.state.peek(key, algorithm, cost, now));
  }

  undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined, chargedAt?: number, delayMs?: number): Promise<void> {
    return this.later(key, () => this.state.undo(key, algorithm, cost, now, chargedAt, delayMs));
  }

  reset(key: string, algorithm: Algorithm): Promise<void> {
    if (this.holdResets) return this.later(key, () => this.state.reset(key, algorithm));
    this.state.reset(key, algorithm);
    return Promise.resolve();
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.later(key, () => this.state.acquire(key, algorithm, leaseId, now));
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    this.state.release(key, algorithm, leaseId);
    return Promise.resolve();
  }

  private later<T>(key: string, run: () => T): Promise<T> {
    this.calls++;
    return new Promise<T>((resolve, reject) => this.pending.push({ key, run, resolve: resolve as (value: unknown) => void, reject }));
  }
}
