// RL_SHORT_WINDOW for a limiter's operator calls, on the store that holds bans and overrides: a ban
// and an override's ttl given as a bare number under a second (`block(key, 60)` meant as a minute,
// rate-limiter-flexible's seconds) warn, as a window does (see @rl/core's short-span.test.ts).
import { createLimiter, fixedWindow } from '@rl/core';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from './memory-store.js';

/** The RL_SHORT_WINDOW warnings `body` emits. */
async function shortWindowWarnings(body: () => Promise<void>): Promise<string[]> {
  const messages: string[] = [];
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((
    warning: string | Error,
    options?: { code?: string },
  ) => {
    if (options?.code === 'RL_SHORT_WINDOW') messages.push(String(warning));
  }) as typeof process.emitWarning);
  try {
    await body();
  } finally {
    spy.mockRestore();
  }
  return messages;
}

describe('RL_SHORT_WINDOW: a ban or an override ttl as a bare number under one second', () => {
  const store = new MemoryStore();
  const limiter = createLimiter({
    algorithm: fixedWindow({ limit: 5, window: '1m' }),
    store,
    prefix: 'short-span',
    bans: true,
    overrides: true,
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await store.close();
  });

  it("limiter.block('ann', 60): 60 ms, did you mean '60s'? (the option stays valid)", async () => {
    const messages = await shortWindowWarnings(async () => {
      await limiter.block('ann', 60);
      await limiter.block('ann', '1m');
    });
    expect(messages).toEqual([
      "limiter.block.duration: 60 is 60 ms: did you mean '60s'? A bare number is milliseconds; write '60ms' to keep 60 ms without this warning.",
    ]);
  });

  it('limiter.setOverride(key, algorithm, { ttl: 90 })', async () => {
    const messages = await shortWindowWarnings(async () => {
      await limiter.setOverride('bob', fixedWindow({ limit: 50, window: '1m' }), { ttl: 90 });
      await limiter.setOverride('bob', fixedWindow({ limit: 50, window: '1m' }), { ttl: '30d' });
    });
    expect(messages.map((m) => m.split(':')[0])).toEqual(['limiter.setOverride.options.ttl']);
  });
});
