/**
 * A rate algorithm per call (`consume(key, cost, algorithm)`): what a plan or quota chosen per
 * request relies on. The state of a key is per algorithm kind, whatever the configuration.
 */
import { describe, expect, it, vi } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';

const free = tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' });
const pro = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });

describe('an algorithm per call', () => {
  it('decides each call with its algorithm; a key keeps its state when the plan changes, clamped to the new capacity', async () => {
    const limiter = createLimiter({ store: new TestStore(), clock: () => 0 });
    expect(limiter.algorithm).toBeUndefined();
    const remaining: number[] = [];
    for (const plan of [pro, pro, pro, pro, free, free, pro])
      remaining.push((await limiter.consume('ann', 1, plan)).remaining);
    // 1 token left of 5; on the free plan it stays 1 (not a fresh 2), then none; back on pro, still none.
    expect(remaining).toEqual([4, 3, 2, 1, 0, 0, 0]);
    expect((await limiter.consume('ann', 1, free)).allowed).toBe(false);
    expect((await limiter.consume('bob', 1, free)).policy).toBe(free.policy);
  });

  it('has no algorithm of its own without one: a call must give one', async () => {
    const limiter = createLimiter({ store: new TestStore() });
    await expect(limiter.consume('k')).rejects.toMatchObject({ code: 'RL_INVALID_ALGORITHM' });
    expect(() => limiter.consumeSync('k')).toThrow(expect.objectContaining({ code: 'RL_INVALID_ALGORITHM' }));
    await expect(limiter.peek('k')).rejects.toMatchObject({ code: 'RL_INVALID_ALGORITHM' });
    expect(limiter.consumeSync('k', 1, free).allowed).toBe(true);
  });

  it.each([
    ['not an algorithm', { capacity: 5 }, 'RL_INVALID_ALGORITHM'],
    ['a concurrency algorithm', concurrency({ limit: 2 }), 'RL_INVALID_ALGORITHM'],
    ['null', null, 'RL_INVALID_ALGORITHM'],
  ])('rejects %s before anything is charged', async (_label, bad, code) => {
    const store = new TestStore();
    const charge = vi.spyOn(store, 'charge');
    const limiter = createLimiter({ algorithm: free, store });
    await expect(limiter.consume('k', 1, bad as never)).rejects.toMatchObject({ code });
    expect(charge).not.toHaveBeenCalled();
  });

  it('checks the cost against the call’s algorithm and the limiter’s maxCost', async () => {
    const limiter = createLimiter({ store: new TestStore(), maxCost: 4 });
    await expect(limiter.consume('k', 3, free)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    await expect(limiter.consume('k', 5, pro)).rejects.toMatchObject({
      code: 'RL_COST_EXCEEDS_CAPACITY',
      message: expect.stringMatching(/maxCost 4/),
    });
    expect((await limiter.consume('k', 4, pro)).remaining).toBe(1);
  });

  it('rejects a kind the store does not run', async () => {
    const limiter = createLimiter({ algorithm: free, store: new TestStore({ algorithms: ['token-bucket'] }) });
    await expect(limiter.consume('k', 1, fixedWindow({ limit: 1, window: '1m' }))).rejects.toMatchObject({
      code: 'RL_UNSUPPORTED',
    });
  });

  it('gives back and resets in every kind a key was charged in', async () => {
    const log = slidingWindowLog({ limit: 2, window: '1h' });
    const limiter = createLimiter({ algorithm: free, store: new TestStore(), clock: () => 0 });
    await limiter.consume('k', 2, pro);
    await limiter.consume('k', 1, log);
    await limiter.consume('k', 1, log);
    await limiter.undo('k', 1, log);
    expect((await limiter.peek('k', 0, log)).remaining).toBe(1);
    await limiter.reset('k');
    expect((await limiter.peek('k', 0, pro)).remaining).toBe(5);
    expect((await limiter.peek('k', 0, log)).remaining).toBe(2);
  });

  it('keeps a cached denial to its own algorithm: a plan that changed asks the store', async () => {
    const store = new TestStore({ answers: 'manual' });
    const limiter = createLimiter({ store, clock: () => 0, timeout: false });
    const first = limiter.consume('ann', 2, free);
    store.answerAll();
    expect((await first).allowed).toBe(true);
    const denied = limiter.consume('ann', 1, free);
    store.answerAll();
    expect(await denied).toMatchObject({ allowed: false });
    expect((await denied).reason).toBeUndefined();
    expect((await limiter.consume('ann', 1, free)).reason).toBe('deny-cache');
    const upgraded = limiter.consume('ann', 1, pro);
    expect(store.pending).toHaveLength(1);
    store.answerAll();
    expect((await upgraded).reason).toBeUndefined();
  });
});
