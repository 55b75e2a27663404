import { ALGORITHM_KINDS, type Algorithm, type ConcurrencyAlgorithm, type LeaseState, type NumericAlgorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { StoreClosedError, StoreError } from '../errors.js';
import type { MaybePromise, Store } from '../store/interface.js';

// For the tests of the engine and the HTTP layer only (not exported from the package).

/**
 * A store for numeric and concurrency algorithms over Maps, answering synchronously (`local`) or
 * with promises (a remote store); it counts give-backs and can be made to fail.
 */
export class TestStore implements Store {
  readonly capabilities: Store['capabilities'];
  readonly numeric = new Map<string, number[]>();
  readonly leases = new Map<string, LeaseState>();
  undos = 0;
  /** What `consume` and `acquire` do: answer, fail as a store (the failure policy applies) or throw a misuse error (it propagates). */
  mode: 'answer' | 'fail' | 'closed' = 'answer';

  constructor(readonly local = true) {
    this.capabilities = { local, algorithms: ALGORITHM_KINDS, reservations: true };
  }

  consume(key: string, algorithm: Algorithm, cost: number, now = 0, maxDelay?: number): MaybePromise<Decision> {
    return this.answer(() => {
      const a = algorithm as NumericAlgorithm;
      const state = this.numeric.get(key);
      const s = state ?? new Array<number>(a.stateSize).fill(0);
      this.numeric.set(key, s);
      return a.step(s, 0, state === undefined, now, cost, true, maxDelay);
    });
  }
  reserve(key: string, algorithm: Algorithm, cost: number, maxDelayMs: number, now = 0): MaybePromise<Decision> {
    return this.consume(key, algorithm, cost, now, maxDelayMs);
  }
  peek(key: string, algorithm: Algorithm, cost: number, now = 0): Decision {
    const a = algorithm as NumericAlgorithm;
    const state = this.numeric.get(key);
    return a.step(state ?? new Array<number>(a.stateSize).fill(0), 0, state === undefined, now, cost, false);
  }
  undo(key: string, algorithm: Algorithm, cost: number, now = 0, chargedAt?: number, delayMs?: number): void {
    this.undos++;
    const state = this.numeric.get(key);
    if (state) (algorithm as NumericAlgorithm).undo(state, 0, now, cost, chargedAt, delayMs);
  }
  reset(key: string): void {
    this.numeric.delete(key);
  }
  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now = 0): MaybePromise<Decision> {
    return this.answer(() => {
      const { state, decision } = algorithm.acquire(this.leases.get(key), now, leaseId, true);
      this.leases.set(key, state);
      return decision;
    });
  }
  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): void {
    const state = this.leases.get(key);
    if (state) algorithm.release(state, leaseId);
  }
  /** Live permits of `key`. */
  held(key: string): number {
    return this.leases.get(key)?.size ?? 0;
  }

  private answer(decide: () => Decision): MaybePromise<Decision> {
    if (this.mode === 'closed') throw new StoreClosedError();
    if (this.mode === 'fail') {
      if (this.local) throw new StoreError('down');
      return Promise.reject(new StoreError('down'));
    }
    const decision = decide();
    return this.local ? decision : Promise.resolve(decision);
  }
}
