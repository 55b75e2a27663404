import type { Algorithm, AlgorithmKind, ConcurrencyAlgorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { StoreError } from '../errors.js';
import type { Store, StoreCapabilities } from '../store.js';
import { StepStore } from './step-store.js';

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * A remote-like store for testing what a limiter does while its store is slow or failing: `consume`,
 * `peek`, `undo` and `acquire` wait until the test calls `answerAll()` (each is then decided by a
 * {@link StepStore} at its `now`, 0 when none was given) or `failAll()` (each rejects with a
 * `StoreError`); `reset` and `release` apply at once. `capabilities.local` is false.
 */
export class ManualStore implements Store {
  readonly capabilities: StoreCapabilities;
  /** Calls waiting for an answer, oldest first. */
  readonly pending: Pending[] = [];
  /** How many calls have waited (answered or not). */
  calls = 0;
  private readonly inner: StepStore;

  constructor(algorithms?: readonly AlgorithmKind[]) {
    this.inner = new StepStore({ algorithms, clock: () => 0 });
    this.capabilities = { local: false, algorithms: this.inner.capabilities.algorithms };
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

  /** Fails every waiting call with `new StoreError(message)`. */
  failAll(message = 'connection lost'): void {
    for (const p of this.pending.splice(0)) p.reject(new StoreError(message));
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.later(() => this.inner.consume(key, algorithm, cost, now));
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.later(() => this.inner.peek(key, algorithm, cost, now));
  }

  undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<void> {
    return this.later(() => this.inner.undo(key, algorithm, cost, now));
  }

  reset(key: string, algorithm: Algorithm): Promise<void> {
    return Promise.resolve(this.inner.reset(key, algorithm));
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.later(() => this.inner.acquire(key, algorithm, leaseId, now));
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    return Promise.resolve(this.inner.release(key, algorithm, leaseId));
  }

  private later<T>(run: () => T): Promise<T> {
    this.calls++;
    return new Promise<T>((resolve, reject) => this.pending.push({ run, resolve: resolve as (value: unknown) => void, reject }));
  }
}
