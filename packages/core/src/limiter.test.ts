/**
 * The limiter's handling of a remote store that is slow or failing: the timeout, the store-down
 * circuit with one probe at a time, the reason of decisions taken without the store, the deny cache's
 * timing, and permits granted after their acquire timed out. The store here is a small asynchronous
 * in-process store whose answers the test releases or fails by hand; real Redis failures are tested in
 * packages/store-redis/test/failure.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Algorithm, ConcurrencyAlgorithm, LeaseState } from './algorithm.js';
import { concurrency } from './algorithms/concurrency.js';
import { tokenBucket } from './algorithms/token-bucket.js';
import type { Decision } from './decision.js';
import { StoreError } from './errors.js';
import { createLimiter, type StoreErrorEvent } from './limiter.js';
import type { Store } from './store.js';
import { FakeTimers } from './testing/fake-timers.js';

interface Pending {
  run: () => Decision | void;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** A remote-like store: every call waits until the test calls `answerAll()` or `failAll()`. */
class ManualStore implements Store {
  readonly capabilities = { local: false, algorithms: ['token-bucket', 'concurrency'] as const } as unknown as Store['capabilities'];
  readonly pending: Pending[] = [];
  calls = 0;
  private readonly buckets = new Map<string, Float64Array>();
  readonly leases = new Map<string, LeaseState>();

  private enqueue<T>(run: () => T): Promise<T> {
    this.calls++;
    return new Promise<T>((resolve, reject) => this.pending.push({ run: run as () => Decision, resolve: resolve as (v: unknown) => void, reject }));
  }

  answerAll(): void {
    for (const p of this.pending.splice(0)) p.resolve(p.run());
  }

  failAll(): void {
    for (const p of this.pending.splice(0)) p.reject(new StoreError('connection lost'));
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.enqueue(() => {
      if (algorithm.stateKind !== 'numeric') throw new Error('numeric only');
      const state = this.buckets.get(key);
      const s = state ?? new Float64Array(algorithm.stateSize);
      const decision = algorithm.step(s, 0, state === undefined, now ?? 0, cost, true);
      this.buckets.set(key, s);
      return decision;
    });
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.enqueue(() => {
      if (algorithm.stateKind !== 'numeric') throw new Error('numeric only');
      const state = this.buckets.get(key);
      return algorithm.step(state ?? new Float64Array(algorithm.stateSize), 0, state === undefined, now ?? 0, cost, false);
    });
  }

  undo(): Promise<void> {
    return this.enqueue(() => undefined);
  }

  reset(key: string): Promise<void> {
    this.buckets.delete(key);
    return Promise.resolve();
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.enqueue(() => {
      const { state, decision } = algorithm.acquire(this.leases.get(key), now ?? 0, leaseId, true);
      this.leases.set(key, state);
      return decision;
    });
  }

  release(key: string, _algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    this.leases.get(key)?.delete(leaseId);
    return Promise.resolve();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const bucket = () => tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' });

describe('limiter with a remote store that is slow or failing', () => {
  it('a call that does not answer within the timeout resolves by the policy (reason timeout); its late answer is ignored', async () => {
    const store = new ManualStore();
    const timers = new FakeTimers();
    const limiter = createLimiter({ algorithm: bucket(), store, timeout: 20, timers });
    const events: StoreErrorEvent[] = [];
    limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    let decision: Decision | undefined;
    void limiter.consume('k').then((d) => (decision = d));
    await timers.advanceAsync(19);
    expect(decision).toBeUndefined();
    await timers.advanceAsync(1);
    expect(decision).toMatchObject({ allowed: false, reason: 'timeout' });
    expect(events).toMatchObject([{ reason: 'timeout', action: 'deny', key: 'k' }]);
    expect(timers.pending).toBe(0);
    store.answerAll(); // the late answer settles nothing and throws nothing
    await timers.advanceAsync(0);
  });

  it('while the circuit is open, decisions repeat the opening reason without a call; then one probe at a time', async () => {
    const store = new ManualStore();
    let now = 1_000;
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => now, timeout: 20, storeRetryInterval: 100, storeFailureThreshold: 1 });
    expect((await limiter.consume('k')).reason).toBe('timeout');
    store.pending.splice(0);
    const callsAfterFailure = store.calls;
    const skipped = await Promise.all([limiter.consume('k'), limiter.peek('k')]);
    expect(skipped.map((d) => d.reason)).toEqual(['timeout', 'timeout']);
    expect(store.calls).toBe(callsAfterFailure);

    now += 100; // the retry time has come: one probe goes, the others keep the policy
    const probe = limiter.consume('k');
    const others = await Promise.all([limiter.consume('k'), limiter.consume('k')]);
    expect(store.calls).toBe(callsAfterFailure + 1);
    expect(others.map((d) => d.reason)).toEqual(['timeout', 'timeout']);
    store.answerAll();
    expect((await probe).reason).toBeUndefined();

    // The probe succeeded: the circuit is closed, every call goes to the store again.
    const next = limiter.consume('k');
    expect(store.calls).toBe(callsAfterFailure + 2);
    store.answerAll();
    expect((await next).reason).toBeUndefined();
  });

  it('the circuit opens only when storeFailureThreshold calls failed within storeRetryInterval', async () => {
    const store = new ManualStore();
    let now = 0;
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => now, timeout: false, storeRetryInterval: 100 });
    for (const t of [0, 60, 170]) {
      now = t;
      const failing = limiter.consume('k');
      store.failAll();
      expect((await failing).reason).toBe('store-error');
    }
    // Three failures, but never three within 100 ms: every call still goes to the store.
    now = 200;
    const answered = limiter.consume('k');
    expect(store.pending).toHaveLength(1);
    store.answerAll();
    expect((await answered).reason).toBeUndefined();
    now = 210;
    const third = limiter.consume('k');
    store.failAll();
    await third; // failures at 60, 170, 210: not three within 100 ms
    const calls = store.calls;
    now = 220;
    const fourth = limiter.consume('k');
    store.failAll();
    await fourth; // 170, 210, 220: three within 100 ms: the circuit opens
    now = 230;
    expect((await limiter.consume('k')).reason).toBe('store-error');
    expect(store.calls).toBe(calls + 1);
  });

  it('a failed probe keeps the circuit open for another interval (reason store-error)', async () => {
    const store = new ManualStore();
    let now = 0;
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => now, timeout: false, storeRetryInterval: 50, storeFailureThreshold: 1 });
    const first = limiter.consume('k');
    store.failAll();
    expect((await first).reason).toBe('store-error');
    now = 50;
    const probe = limiter.consume('k');
    store.failAll();
    expect((await probe).reason).toBe('store-error');
    const calls = store.calls;
    now = 99;
    expect((await limiter.consume('k')).reason).toBe('store-error');
    expect(store.calls).toBe(calls);
  });

  it('the deny cache holds a denial from the time the request was sent, for retryAfterMs', async () => {
    const store = new ManualStore();
    let now = 10_000;
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => now, timeout: false });
    for (let i = 0; i < 2; i++) {
      const d = limiter.consume('k');
      store.answerAll();
      expect((await d).allowed).toBe(true);
    }
    const denied = limiter.consume('k');
    now += 400; // the answer takes 400 ms to arrive
    store.answerAll();
    const decision = await denied;
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 });
    // Cached until sent + retryAfterMs, not until answered + retryAfterMs.
    const cached = await limiter.consume('k');
    expect(cached).toMatchObject({ allowed: false, reason: 'deny-cache', retryAfterMs: 3_600_000 - 400 });
    now = 10_000 + 3_600_000;
    const calls = store.calls;
    const fresh = limiter.consume('k');
    expect(store.calls).toBe(calls + 1);
    store.answerAll();
    expect((await fresh).allowed).toBe(true);
  });

  it('a permit granted after its acquire timed out is released when the late answer arrives', async () => {
    const store = new ManualStore();
    const limiter = createLimiter({ algorithm: concurrency({ limit: 1 }), store, timeout: 20 });
    const timedOut = await limiter.acquire('k');
    expect(timedOut.reason).toBe('timeout');
    store.answerAll(); // the store grants the permit late
    await sleep(5);
    expect(store.leases.get('k')?.size).toBe(0);
  });
});

/** A minimal local store for numeric algorithms: one Float64Array slot per key, synchronous decisions. */
function localNumericStore(): Store {
  const states = new Map<string, Float64Array>();
  const decide = (key: string, algorithm: Algorithm, cost: number, now: number | undefined, commit: boolean): Decision => {
    if (algorithm.stateKind !== 'numeric') throw new Error('numeric algorithms only');
    let state = states.get(key);
    const fresh = state === undefined;
    state ??= new Float64Array(algorithm.stateSize);
    if (commit) states.set(key, state);
    return algorithm.step(state, 0, fresh, now ?? Date.now(), cost, commit);
  };
  return {
    capabilities: { local: true, algorithms: ['token-bucket'] },
    consume: (key, algorithm, cost, now) => decide(key, algorithm, cost, now, true),
    peek: (key, algorithm, cost, now) => decide(key, algorithm, cost, now, false),
    undo: () => undefined,
    reset: (key) => void states.delete(key),
    acquire: () => {
      throw new Error('no leases');
    },
    release: () => undefined,
  };
}

describe('consumeSync', () => {
  it('gives the same decisions as consume on a local store, synchronously', async () => {
    let now = 0;
    const store = localNumericStore();
    const sync = createLimiter({ algorithm: tokenBucket({ capacity: 3, refillRate: 1 }), store, clock: () => now, prefix: 'sync' });
    const promised = createLimiter({ algorithm: tokenBucket({ capacity: 3, refillRate: 1 }), store, clock: () => now, prefix: 'promised' });
    for (const [t, cost] of [[0, 1], [0, 2], [0, 1], [500, 1], [1000, 1], [1000, 3]] as const) {
      now = t;
      const a = sync.consumeSync('k', cost);
      expect(a).not.toBeInstanceOf(Promise);
      expect(a).toEqual(await promised.consume('k', cost));
    }
    expect(sync.consumeSync('k').allowed).toBe(false);
  });

  it('throws typed errors synchronously and refuses remote stores', () => {
    const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 3, refillRate: 1 }), store: localNumericStore() });
    expect(() => limiter.consumeSync('k', Number.NaN)).toThrow(expect.objectContaining({ code: 'RL_INVALID_COST' }));
    expect(() => limiter.consumeSync('k', 4)).toThrow(expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }));
    expect(() => limiter.consumeSync('')).toThrow(expect.objectContaining({ code: 'RL_INVALID_KEY' }));
    const remote = createLimiter({ algorithm: tokenBucket({ capacity: 3, refillRate: 1 }), store: new ManualStore() });
    expect(() => remote.consumeSync('k')).toThrow(expect.objectContaining({ code: 'RL_UNSUPPORTED' }));
  });

  it('a local fallback keeps it synchronous when the local store fails', () => {
    const failing = localNumericStore();
    failing.consume = () => {
      throw new StoreError('disk on fire');
    };
    const limiter = createLimiter({
      algorithm: tokenBucket({ capacity: 3, refillRate: 1 }),
      store: failing,
      onStoreError: { fallback: { algorithm: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }), store: localNumericStore() } },
    });
    expect(limiter.consumeSync('k')).toMatchObject({ allowed: true, reason: 'fallback' });
    expect(limiter.consumeSync('k')).toMatchObject({ allowed: false, reason: 'fallback' });
  });
});
