import { describe, expect, it } from 'vitest';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { createLimiter } from '../limiter/index.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore } from './test-store.js';

describe('TestStore', () => {
  const algorithm = tokenBucket({ capacity: 2, refillRate: 1 });

  it('answers only when the test says so, with the decisions of the algorithm', async () => {
    const store = new TestStore({ answers: 'manual', algorithms: ['token-bucket'] });
    const first = store.charge({ key: 'k', algorithm, cost: 2 }, 0);
    const second = store.charge({ key: 'k', algorithm, cost: 1 }, 0);
    expect(store.pending).toHaveLength(2);
    store.answerAll();
    expect((await first).decision).toMatchObject({ allowed: true, remaining: 0 });
    expect((await second).decision).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    expect(store.calls).toEqual(['charge k', 'charge k']);
  });

  it('fails every waiting call with a StoreError', async () => {
    const store = new TestStore({ answers: 'manual' });
    const pending = store.peek('k', algorithm, 0, 0);
    store.failAll();
    await expect(pending).rejects.toMatchObject({ code: 'RL_STORE_ERROR' });
  });

  it('lets a limiter time out on fake timers while the store hangs', async () => {
    const timers = new FakeTimers();
    const limiter = createLimiter({
      algorithm,
      store: new TestStore({ answers: 'manual' }),
      timeout: 50,
      timers,
      denyCache: false,
    });
    const decision = limiter.consume('k');
    await timers.advanceAsync(50);
    expect(await decision).toMatchObject({ reason: 'timeout' });
  });
});
