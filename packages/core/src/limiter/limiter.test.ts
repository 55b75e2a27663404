/**
 * The limiter's verbs and its entry points for the composition engine: the same decisions
 * synchronously and with a promise, validation once (key, cost, maxCost), and the checked entry
 * points' promise-or-value contract. The timeout, circuit, deny cache and failure policy have their
 * own files beside this one.
 */
import { describe, expect, it } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { StoreError } from '../errors.js';
import { LocalStore, ManualStore } from '../testing/manual-store.js';
import { createLimiter } from './limiter.js';
import type { StoreErrorEvent } from './options.js';

const bucket = (capacity = 3) => tokenBucket({ capacity, refillRate: 1 });

describe('consumeSync', () => {
  it('gives the same decisions as consume on a local store, synchronously', async () => {
    let now = 0;
    const store = new LocalStore();
    const sync = createLimiter({ algorithm: bucket(), store, clock: () => now, prefix: 'sync' });
    const promised = createLimiter({ algorithm: bucket(), store, clock: () => now, prefix: 'promised' });
    for (const [t, cost] of [[0, 1], [0, 2], [0, 1], [500, 1], [1000, 1], [1000, 3]] as const) {
      now = t;
      const a = sync.consumeSync('k', cost);
      expect(a).not.toBeInstanceOf(Promise);
      expect(a).toEqual(await promised.consume('k', cost));
    }
    expect(sync.consumeSync('k').allowed).toBe(false);
  });

  it('throws typed errors synchronously and refuses remote stores', () => {
    const limiter = createLimiter({ algorithm: bucket(), store: new LocalStore() });
    expect(() => limiter.consumeSync('k', Number.NaN)).toThrow(expect.objectContaining({ code: 'RL_INVALID_COST' }));
    expect(() => limiter.consumeSync('k', 4)).toThrow(expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }));
    expect(() => limiter.consumeSync('')).toThrow(expect.objectContaining({ code: 'RL_INVALID_KEY' }));
    const remote = createLimiter({ algorithm: bucket(), store: new ManualStore() });
    expect(() => remote.consumeSync('k')).toThrow(expect.objectContaining({ code: 'RL_UNSUPPORTED' }));
  });
});

describe('maxCost', () => {
  it('defaults to the algorithm’s maxCost; a larger cost is rejected by every verb that takes one', async () => {
    expect(createLimiter({ algorithm: bucket(), store: new LocalStore() }).maxCost).toBe(3);
    const limiter = createLimiter({ algorithm: bucket(), store: new LocalStore(), maxCost: 2 });
    expect(limiter.maxCost).toBe(2);
    expect(limiter.consumeSync('k', 2).allowed).toBe(true);
    expect(() => limiter.consumeSync('k', 2.5)).toThrow(expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY', message: expect.stringMatching(/maxCost 2/) }));
    await expect(limiter.consume('k', 3)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    await expect(limiter.peek('k', 3)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    await expect(limiter.undo('k', 3)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
  });

  it('must be a finite number greater than 0 and at most the algorithm’s maxCost', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 4, '2']) {
      expect(() => createLimiter({ algorithm: bucket(), store: new LocalStore(), maxCost: bad as number })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.maxCost' }),
      );
    }
  });
});

describe('acquire', () => {
  it('is synchronous underneath on a local store, and a permit is given back by release()', async () => {
    const store = new LocalStore();
    const limiter = createLimiter({ algorithm: concurrency({ limit: 1 }), store });
    const held = limiter.acquireChecked('k');
    expect(held).not.toBeInstanceOf(Promise);
    expect((await limiter.acquire('k')).allowed).toBe(false);
    const permit = await held;
    await permit.release();
    await permit.release();
    expect((await limiter.acquire('k')).allowed).toBe(true);
    expect(store.calls.filter((c) => c.startsWith('release'))).toHaveLength(1);
  });

  it('goes through the same circuit as consume', async () => {
    const store = new ManualStore();
    const limiter = createLimiter({ algorithm: concurrency({ limit: 1 }), store, timeout: false, storeFailureThreshold: 1 });
    const failing = limiter.acquire('k');
    store.failAll();
    expect(await failing).toMatchObject({ allowed: false, reason: 'store-error' });
    const calls = store.calls;
    const skipped = await limiter.acquire('k');
    expect(skipped).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(store.calls).toBe(calls);
    await skipped.release(); // nothing to release
  });

  it('is for concurrency limits only, as consume is for rates', async () => {
    await expect(createLimiter({ algorithm: bucket(), store: new LocalStore() }).acquire('k')).rejects.toMatchObject({ code: 'RL_UNSUPPORTED' });
    await expect(createLimiter({ algorithm: concurrency({ limit: 1 }), store: new LocalStore() }).consume('k')).rejects.toMatchObject({ code: 'RL_UNSUPPORTED' });
    await expect(createLimiter({ algorithm: concurrency({ limit: 1 }), store: new LocalStore() }).acquire('')).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
  });
});

describe('the checked entry points', () => {
  it('consumeChecked decides like consume, synchronously on a synchronous limiter, with a promise otherwise', async () => {
    const local = createLimiter({ algorithm: bucket(), store: new LocalStore(), clock: () => 0 });
    const decision = local.consumeChecked('k', 2);
    expect(decision).not.toBeInstanceOf(Promise);
    expect(decision).toMatchObject({ allowed: true, remaining: 1 });
    const store = new ManualStore();
    const remote = createLimiter({ algorithm: bucket(), store, clock: () => 0, timeout: false });
    const pending = remote.consumeChecked('k', 2);
    expect(pending).toBeInstanceOf(Promise);
    store.answerAll();
    expect(await pending).toEqual(decision);
  });

  it('undoChecked gives units back, and never rejects: a failure is a storeError event', async () => {
    const store = new LocalStore();
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => 0 });
    limiter.consumeChecked('k', 3);
    expect(limiter.undoChecked('k', 2)).toBeUndefined();
    expect(limiter.consumeSync('k', 2).allowed).toBe(true);

    const events: StoreErrorEvent[] = [];
    limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    store.failure = new StoreError('disk on fire');
    expect(() => limiter.undoChecked('k', 1)).not.toThrow();
    const remote = new ManualStore();
    const remoteLimiter = createLimiter({ algorithm: bucket(), store: remote, timeout: false });
    remoteLimiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    const undone = remoteLimiter.undoChecked('k', 1);
    remote.failAll();
    await expect(undone).resolves.toBeUndefined();
    expect(events.map((e) => [e.reason, e.action, e.key])).toEqual([
      ['store-error', 'deny', 'k'],
      ['store-error', 'deny', 'k'],
    ]);
  });
});
