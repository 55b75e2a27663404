/** An operator's control (reset, ban, unban) on a store that fails: one control, one failure reported, whatever the layouts it goes through. */
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow, StoreError, type StoreErrorEvent } from '@rl/core';
import { MemoryStore } from './memory-store.js';

/** A memory store whose resets, bans and unbans fail: at once (`throw`) or by a rejected promise (`reject`). */
function failingStore(how: 'throw' | 'reject'): MemoryStore {
  const fail = (): Promise<void> => {
    const error = new StoreError('the store is down');
    if (how === 'throw') throw error;
    return Promise.reject(error);
  };
  const store = new MemoryStore();
  store.reset = fail;
  store.ban = fail;
  store.unban = fail;
  return store;
}

describe('a control on a failing store', () => {
  it('a layout that throws after others rejected: one rejection of the control, none left unheard', async () => {
    const store = new MemoryStore();
    let calls = 0;
    // The first layout's reset rejects (a promise), the second throws at once.
    store.reset = () => {
      if (++calls === 1) return Promise.reject(new StoreError('rejected'));
      throw new StoreError('at once');
    };
    const limiter = createLimiter({ store, timeout: false });
    const unheard: unknown[] = [];
    const listen = (reason: unknown): void => void unheard.push(reason);
    process.on('unhandledRejection', listen);
    try {
      await expect(limiter.reset('k')).rejects.toThrow('at once');
      // Node tells of an unhandled rejection once the microtasks of its turn are done: a turn later.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', listen);
    }
    expect(unheard).toEqual([]);
  });

  for (const how of ['throw', 'reject'] as const) {
    for (const [verb, control] of [
      ['reset', (l: ReturnType<typeof createLimiter>) => l.reset('k')],
      ['block', (l: ReturnType<typeof createLimiter>) => l.block('k', '1h')],
      ['unblock', (l: ReturnType<typeof createLimiter>) => l.unblock('k')],
    ] as const) {
      it(`${verb} (the store's calls ${how}): rejects with the StoreError after one storeError event, though it goes through every rate layout`, async () => {
        const limiter = createLimiter({
          algorithm: fixedWindow({ limit: 5, window: '10s' }),
          store: failingStore(how),
          bans: true,
          timeout: false,
        });
        const events: StoreErrorEvent[] = [];
        limiter.on('storeError', (event) => void events.push(event));
        await expect(control(limiter)).rejects.toBeInstanceOf(StoreError);
        expect(events).toHaveLength(1);
      });
    }
  }
});
