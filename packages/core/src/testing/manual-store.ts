import type { Algorithm, AlgorithmKind, ConcurrencyAlgorithm, LeaseState } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { StoreError } from '../errors.js';
import type { Store, StoreCapabilities } from '../store.js';

const KINDS: readonly AlgorithmKind[] = ['token-bucket', 'fixed-window', 'concurrency'];

/**
 * A local store for tests: numeric algorithms (one `Float64Array` per key) and concurrency leases, all
 * synchronous. Set `failure` to make every decision throw it (a store that is down). `now` defaults to
 * 0 when the limiter has no clock.
 */
export class LocalStore implements Store {
  readonly capabilities: StoreCapabilities = { local: true, algorithms: KINDS };
  /** Thrown by every call while set. */
  failure: Error | undefined;
  readonly calls: string[] = [];
  readonly numbers = new Map<string, Float64Array>();
  readonly leases = new Map<string, LeaseState>();

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    return this.decide('consume', key, algorithm, cost, now, true);
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    return this.decide('peek', key, algorithm, cost, now, false);
  }

  undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined): void {
    this.record('undo', key);
    const state = this.numbers.get(key);
    if (state !== undefined && algorithm.stateKind === 'numeric') algorithm.undo(state, 0, now ?? 0, cost);
  }

  reset(key: string): void {
    this.record('reset', key);
    this.numbers.delete(key);
    this.leases.delete(key);
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Decision {
    this.record('acquire', key);
    const { state, decision } = algorithm.acquire(this.leases.get(key), now ?? 0, leaseId, true);
    this.leases.set(key, state);
    return decision;
  }

  release(key: string, _algorithm: ConcurrencyAlgorithm, leaseId: string): void {
    this.record('release', key);
    this.leases.get(key)?.delete(leaseId);
  }

  private decide(op: string, key: string, algorithm: Algorithm, cost: number, now: number | undefined, commit: boolean): Decision {
    this.record(op, key);
    if (algorithm.stateKind !== 'numeric') throw new Error('LocalStore: numeric algorithms and concurrency only');
    const state = this.numbers.get(key);
    const s = state ?? new Float64Array(algorithm.stateSize);
    if (commit) this.numbers.set(key, s);
    return algorithm.step(s, 0, state === undefined, now ?? 0, cost, commit);
  }

  private record(op: string, key: string): void {
    this.calls.push(`${op} ${key}`);
    if (this.failure !== undefined) throw this.failure;
  }
}

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * A remote-like store for tests: every call waits until the test calls `answerAll()` (which applies
 * the calls to a {@link LocalStore}, in order) or `failAll()`. `reset` and `release` answer at once.
 */
export class ManualStore implements Store {
  readonly capabilities: StoreCapabilities = { local: false, algorithms: KINDS };
  readonly pending: Pending[] = [];
  /** How many calls waited for an answer. */
  calls = 0;
  /** The state the answered calls applied to. */
  readonly state = new LocalStore();

  get leases(): Map<string, LeaseState> {
    return this.state.leases;
  }

  answerAll(): void {
    for (const p of this.pending.splice(0)) {
      try {
        p.resolve(p.run());
      } catch (error) {
        p.reject(error as Error);
      }
    }
  }

  failAll(error: Error = new StoreError('connection lost')): void {
    for (const p of this.pending.splice(0)) p.reject(error);
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.enqueue(() => this.state.consume(key, algorithm, cost, now));
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.enqueue(() => this.state.peek(key, algorithm, cost, now));
  }

  undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<void> {
    return this.enqueue(() => this.state.undo(key, algorithm, cost, now));
  }

  reset(key: string): Promise<void> {
    this.state.reset(key);
    return Promise.resolve();
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.enqueue(() => this.state.acquire(key, algorithm, leaseId, now));
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    this.state.release(key, algorithm, leaseId);
    return Promise.resolve();
  }

  private enqueue<T>(run: () => T): Promise<T> {
    this.calls++;
    return new Promise<T>((resolve, reject) => this.pending.push({ run, resolve: resolve as (value: unknown) => void, reject }));
  }
}
