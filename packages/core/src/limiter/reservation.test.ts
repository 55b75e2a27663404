/** limiter.reserve: its input, the deny cache, the failure policy, cancel() and the observer's event, on stores a test drives. */
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { StoreError, UnsupportedError } from '../errors.js';
import { TestStore } from '../testing/test-store.js';
import { StepStore } from '../testing/step-store.js';
import { createLimiter } from './limiter.js';

const bucket = () => tokenBucket({ capacity: 2, refillRate: 1 });

describe('limiter.reserve', () => {
  it('takes maxDelay as a duration string, per-call algorithms as consume does, and refuses a store without reservations', async () => {
    const limiter = createLimiter({ store: new StepStore(), clock: () => 0 });
    const per = bucket();
    expect(await limiter.reserve('k', 2, { maxDelay: '1s', algorithm: per })).toMatchObject({
      allowed: true,
      delayMs: 0,
    });
    expect(await limiter.reserve('k', 1, { maxDelay: '1s', algorithm: per })).toMatchObject({
      allowed: true,
      delayMs: 1000,
    });
    await expect(limiter.reserve('k', 1, undefined)).rejects.toMatchObject({
      code: 'RL_INVALID_OPTION',
      field: 'limiter.reserve.options',
    });
    // A window queues one window at most; a token bucket any wait a timer can hold (24 days).
    await expect(
      limiter.reserve('k', 1, { maxDelay: '2s', algorithm: fixedWindow({ limit: 1, window: '1s' }) }),
    ).rejects.toThrow(/at most 1s for this fixed-window/);
    expect(await limiter.reserve('k', 1, { maxDelay: '3s', algorithm: per })).toMatchObject({
      allowed: true,
      delayMs: 2000,
    });
    await expect(limiter.reserve('k', 1, { maxDelay: '25d', algorithm: per })).rejects.toThrow(
      /at most 24d 20h 31m 23s 647ms for this token-bucket|at most .* for this token-bucket/,
    );
    const without = createLimiter({ algorithm: bucket(), store: new StepStore({ reservations: false }) });
    await expect(without.reserve('k', 1, { maxDelay: 10 })).rejects.toBeInstanceOf(UnsupportedError);
  });

  it('cancel() before the slot gives the units back through the undo path (the deny cache forgets the key); after it, nothing', async () => {
    let now = 0;
    const store = new TestStore({ answers: 'manual' });
    const cancelled: number[] = [];
    const limiter = createLimiter({
      algorithm: bucket(),
      store,
      clock: () => now,
      timeout: false,
      denyCache: true,
      observer: { reservationCancelled: (e) => cancelled.push(e.cost) },
    });
    const settle = async <T>(p: Promise<T>): Promise<T> => {
      await Promise.resolve();
      store.answerAll();
      return p;
    };
    await settle(limiter.consume('k', 2));
    const r = await settle(limiter.reserve('k', 1, { maxDelay: 1000 }));
    expect(r).toMatchObject({ allowed: true, delayMs: 1000 });
    // Denied, and cached: the second consume is answered without the store.
    expect((await settle(limiter.consume('k', 1))).allowed).toBe(false);
    const calls = store.calls.length;
    expect(await limiter.consume('k', 1)).toMatchObject({ allowed: false, reason: 'deny-cache' });
    expect(store.calls.length).toBe(calls);
    now = 500;
    await settle(r.cancel());
    expect(cancelled).toEqual([1]);
    // The cached denial is gone, and the token is back: without the cancel the balance at 1 s would be 0.
    now = 1000;
    expect(await settle(limiter.consume('k', 1))).toMatchObject({ allowed: true });
    const late = await settle(limiter.reserve('k', 1, { maxDelay: 1000 }));
    now = late.delayMs + 1001;
    await late.cancel();
    await late.cancel();
    expect(store.calls.length).toBe(calls + 3);
    expect(cancelled).toEqual([1]);
  });

  it("a reservation's denial is cached for reservations of at most its maxDelay, and never answers a consume", async () => {
    const store = new TestStore({ answers: 'manual' });
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 1, window: '1s' }),
      store,
      clock: () => 0,
      timeout: false,
      denyCache: true,
    });
    const settle = async <T>(p: Promise<T>): Promise<T> => {
      await Promise.resolve();
      store.answerAll();
      return p;
    };
    await settle(limiter.consume('k'));
    // The next window is 1000 ms away.
    expect(await settle(limiter.reserve('k', 1, { maxDelay: 500 }))).toMatchObject({
      allowed: false,
      retryAfterMs: 500,
    });
    expect(await limiter.reserve('k', 1, { maxDelay: 300 })).toMatchObject({
      allowed: false,
      reason: 'deny-cache',
      retryAfterMs: 700,
    });
    const before = store.calls.length;
    expect((await settle(limiter.consume('k'))).reason).toBeUndefined();
    expect(store.calls.length).toBe(before + 1);
    // The consume's denial (for 1000 ms) does not answer a reservation that may wait 1000 ms.
    const calls = store.calls.length;
    const asked = limiter.reserve('k', 1, { maxDelay: 1000 });
    await Promise.resolve();
    expect(store.calls.length).toBe(calls + 1);
    store.answerAll();
    expect(await asked).toMatchObject({ allowed: true, delayMs: 1000 });
  });

  it("a failed store: the failure policy's decision, with no delay, and a cancel that does nothing", async () => {
    const store = new TestStore();
    store.failure = new StoreError('down');
    const allow = createLimiter({ algorithm: bucket(), store, onStoreError: 'allow' });
    const r = await allow.reserve('k', 1, { maxDelay: 1000 });
    expect(r).toMatchObject({ allowed: true, delayMs: 0, reason: 'store-error' });
    await r.cancel();
    expect(store.calls.filter((c) => c.startsWith('giveBack'))).toEqual([]);
    const deny = createLimiter({ algorithm: bucket(), store, storeRetryInterval: 250 });
    expect(await deny.reserve('k', 1, { maxDelay: 1000 })).toMatchObject({
      allowed: false,
      delayMs: 0,
      retryAfterMs: 250,
    });
  });
});

describe('the horizon of a token bucket', () => {
  it('is any wait a timer can hold (24 days), or its whole refill when longer: 1 per 2,949,000,000 ms takes a maxDelay of exactly that (no float noise)', async () => {
    expect(tokenBucket({ capacity: 1, refillRate: 1, interval: 2949 }).maxReserveMs).toBe(2_147_483_647);
    const algorithm = tokenBucket({ capacity: 1, refillRate: 1, interval: 2_949_000_000 });
    expect(algorithm.maxReserveMs).toBe(2_949_000_000);
    let now = 10_000;
    const limiter = createLimiter({ algorithm, store: new StepStore(), clock: () => now });
    expect((await limiter.reserve('k', 1, { maxDelay: 2_949_000_000 })).delayMs).toBe(0);
    const second = await limiter.reserve('k', 1, { maxDelay: 2_949_000_000 });
    expect(second).toMatchObject({ allowed: true, delayMs: 2_949_000_000 });
    now += 1;
    await expect(limiter.reserve('k', 1, { maxDelay: 2_949_000_001 })).rejects.toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION' }),
    );
  });
});
