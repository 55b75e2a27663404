import type { Algorithm, AlgorithmKind, ConcurrencyAlgorithm, LeaseState, Settlement } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { RateLimitError, StoreError } from '../errors.js';
import type { Charge, Charged, GiveBack, MaybePromise, Store, StoreCapabilities } from '../store/interface.js';
import { StepStore } from './step-store.js';

/** How a {@link TestStore} answers. */
export type TestStoreAnswers =
  /** At once, synchronously: a local store (`capabilities.local`), as the memory store. */
  | 'sync'
  /** With a promise that settles at once: a remote store that always answers. */
  | 'async'
  /** With a promise that settles only when the test says so ({@link TestStore.answerAll}, {@link TestStore.failAll}): a slow or failing remote store. */
  | 'manual';

export interface TestStoreOptions {
  /** How it answers; default `'sync'`. */
  answers?: TestStoreAnswers;
  /** The algorithm kinds it runs and declares (default all). */
  algorithms?: readonly AlgorithmKind[];
  /** Gives the store failure domains (`Store.failureDomain`), as a Cluster has nodes: the domain of each storage key. */
  domainOf?: (key: string) => string | number;
}

interface Pending {
  key: string;
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** Answers a waiting call with what its step gives now (its throw as the call's failure). */
function answerNow(p: Pending): void {
  try {
    p.resolve(p.run());
  } catch (failure) {
    p.reject(failure as Error);
  }
}

/**
 * The store a test drives, for what a limiter, a composition or the HTTP layer does with a store's
 * answers: a {@link StepStore} underneath (every algorithm's own step; `now` 0 when the limiter gives
 * none) that records each call in {@link calls} (`'charge <key>'`, `'giveBack <key>'`, …), answers
 * synchronously, with a promise, or only when the test says so ({@link TestStoreOptions.answers}),
 * and fails while {@link failure} is set. It runs lockouts and reservations.
 */
export class TestStore implements Store {
  readonly capabilities: StoreCapabilities;
  /** Every call, in order, as it is made: `'<operation> <key>'`. */
  readonly calls: string[] = [];
  /**
   * While set, every call (or, with {@link failing}, every call for a key it matches) fails with it:
   * a local store throws it; a remote one rejects with it, unless it is a misuse error (a
   * `RateLimitError` other than `RL_STORE_ERROR`, such as a closed store's), which any store throws at once.
   */
  failure: Error | undefined;
  /** While set, only the calls for keys it matches fail with {@link failure} (a part of the store that is down). */
  failing: ((key: string) => boolean) | undefined;
  /** `'manual'`: the calls waiting for an answer, oldest first. */
  readonly pending: Pending[] = [];
  /** `'manual'`: while true, `reset` waits for an answer too (a store that hangs or fails on a reset); `release` never waits. */
  holdResets = false;
  /** Present when the store was given `domainOf`: the failure domain of a key (see `Store.failureDomain`). */
  readonly failureDomain?: (key: string, algorithm: Algorithm) => string | number;
  /** The state the answered calls applied to: read it (`state.peek(…)`) without a call of this store. */
  readonly state: StepStore;
  private readonly answers: TestStoreAnswers;
  private readonly inner: StepStore;

  constructor(options: TestStoreOptions = {}) {
    this.answers = options.answers ?? 'sync';
    const domainOf = options.domainOf;
    if (domainOf !== undefined) this.failureDomain = (key) => domainOf(key);
    this.inner = new StepStore({ algorithms: options.algorithms, clock: () => 0 });
    this.state = this.inner;
    this.capabilities = {
      local: this.answers === 'sync',
      algorithms: this.inner.capabilities.algorithms,
      blocks: true,
      reservations: true,
      settle: true,
    };
  }

  /** The live leases of a key under a concurrency limit (undefined: none). */
  leasesOf(key: string): LeaseState | undefined {
    return this.inner.leasesOf(key);
  }

  /** How many permits `key` holds now. */
  held(key: string): number {
    return this.inner.leasesOf(key)?.size ?? 0;
  }

  /** `'manual'`: answers every waiting call, in order. */
  answerAll(): void {
    this.failWhere(() => false);
  }

  /** `'manual'`: answers every waiting call, in order, then resolves to what `pending` settles to (a call of the limiter on top of this store). */
  answered<T>(pending: Promise<T>): Promise<T> {
    this.answerAll();
    return pending;
  }

  /** `'manual'`: fails every waiting call with `error` (a message becomes a `StoreError`). */
  failAll(error: Error | string = 'connection lost'): void {
    this.failWhere(() => true, error);
  }

  /** `'manual'`: answers the waiting calls for keys `match` accepts, in order; the others keep waiting. */
  answerWhere(match: (key: string) => boolean): void {
    for (const p of this.pending.splice(0)) {
      if (match(p.key)) answerNow(p);
      else this.pending.push(p);
    }
  }

  /** `'manual'`: fails the waiting calls for keys `match` accepts, and answers the others, in order (a part of the store is down). */
  failWhere(match: (key: string) => boolean, error: Error | string = 'connection lost'): void {
    const reason = typeof error === 'string' ? new StoreError(error) : error;
    for (const p of this.pending.splice(0)) {
      if (match(p.key)) p.reject(reason);
      else answerNow(p);
    }
  }

  charge(charge: Charge, now: number | undefined): MaybePromise<Charged> {
    return this.answer('charge', charge.key, () => this.inner.charge(charge, now));
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): MaybePromise<Decision> {
    return this.answer('peek', key, () => this.inner.peek(key, algorithm, cost, now));
  }

  giveBack(back: GiveBack, now: number | undefined): MaybePromise<void> {
    return this.answer('giveBack', back.key, () => this.inner.giveBack(back, now));
  }

  settle(key: string, algorithm: Algorithm, settlement: Settlement, now: number | undefined): MaybePromise<void> {
    return this.answer('settle', key, () => this.inner.settle(key, algorithm, settlement, now));
  }

  reset(key: string, algorithm: Algorithm): MaybePromise<void> {
    return this.answer('reset', key, () => this.inner.reset(key, algorithm), !this.holdResets);
  }

  acquire(
    key: string,
    algorithm: ConcurrencyAlgorithm,
    leaseId: string,
    now: number | undefined,
  ): MaybePromise<Decision> {
    return this.answer('acquire', key, () => this.inner.acquire(key, algorithm, leaseId, now));
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): MaybePromise<void> {
    return this.answer('release', key, () => this.inner.release(key, algorithm, leaseId), true);
  }

  /** Records the call, then fails it, or answers it as this store answers (`atOnce`: a manual store answers this one without waiting). */
  private answer<T>(operation: string, key: string, run: () => T, atOnce = false): MaybePromise<T> {
    this.calls.push(`${operation} ${key}`);
    const failure =
      this.failure !== undefined && (this.failing === undefined || this.failing(key)) ? this.failure : undefined;
    if (
      failure !== undefined &&
      (this.answers === 'sync' || (failure instanceof RateLimitError && failure.code !== 'RL_STORE_ERROR'))
    )
      throw failure;
    if (this.answers === 'sync') return run();
    if (failure !== undefined) return Promise.reject(failure);
    if (this.answers === 'async' || atOnce) {
      try {
        return Promise.resolve(run());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return new Promise<T>((resolve, reject) =>
      this.pending.push({ key, run, resolve: resolve as (value: unknown) => void, reject }),
    );
  }
}
