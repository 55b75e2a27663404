/**
 * Settling a charge at the request's real cost (`limiter.settle`, `combined.settle`): what reaches the
 * store, once; what the observers hear; what is refused; with quota leases, a settle inside the block.
 * The algorithms' own settle steps are the conformance suite's (`describeSettlements`), run by every store.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { combineLimiters } from '../compose/group.js';
import type { SettledEvent } from '../observe/observer.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore, type TestStoreAnswers } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';
import type { LimiterOptions } from './options.js';

const hourly = fixedWindow({ limit: 100, window: '1h' });

function setup(answers: TestStoreAnswers = 'sync', options: Partial<LimiterOptions> = {}) {
  const timers = new FakeTimers();
  const store = new TestStore({ answers });
  const clock = (): number => timers.now();
  const events: SettledEvent[] = [];
  const limiter = createLimiter({
    algorithm: hourly,
    store,
    clock,
    timers,
    observer: { settled: (e) => void events.push(e) },
    ...options,
  });
  const settles = () => store.calls.filter((c) => c.startsWith('settle')).length;
  const used = (key = 'k') => 100 - store.state.peek(key, hourly, 0, clock()).remaining;
  return { timers, store, clock, limiter, events, settles, used };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('limiter.settle', () => {
  it("settles a charge whose call chose its algorithm, given { decision, algorithm }, in that algorithm's state", async () => {
    const { limiter, store, clock } = setup('sync', { algorithm: undefined });
    const daily = fixedWindow({ limit: 50, window: '1d' });
    const decision = await limiter.consume('k', 10, { algorithm: daily });
    await limiter.settle('k', 10, 30, { decision, algorithm: daily });
    expect(store.state.peek('k', daily, 0, clock()).remaining).toBe(20);
    await expect(limiter.settle('k', 10, 30, { decision, algorithm: 'not one' } as never)).rejects.toMatchObject({
      code: 'RL_INVALID_ALGORITHM',
    });
  });

  it('moves the charge by the difference in one store call, and the observers hear the units charged or returned', async () => {
    const { limiter, events, settles, used } = setup();
    const more = await limiter.consume('k', 10);
    await limiter.settle('k', 10, 35, more);
    const less = await limiter.consume('k', 10);
    await limiter.settle('k', 10, 4, less);
    const same = await limiter.consume('k', 10);
    await limiter.settle('k', 10, 10, same);
    expect(used()).toBe(35 + 4 + 10);
    // A settle at the estimate changes nothing: no store call, no event.
    expect(settles()).toBe(2);
    expect(events).toEqual([
      { limit: limiter.name, action: 'charged', units: 25, estimate: 10, actual: 35 },
      { limit: limiter.name, action: 'returned', units: 6, estimate: 10, actual: 4 },
    ]);
  });

  it('settles a decision once: again, or after its undo, is ignored with one RL_ALREADY_SETTLED warning per limiter', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { limiter, settles, used } = setup();
    const first = await limiter.consume('k', 10);
    await limiter.settle('k', 10, 20, first);
    await limiter.settle('k', 10, 90, first);
    const second = await limiter.consume('k', 10);
    await limiter.undo('k', 10, second);
    await limiter.settle('k', 10, 90, second);
    expect([used(), settles()]).toEqual([20, 1]);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledWith(
      expect.stringMatching(
        /^A charge of limit .* was settled or given back twice \(or settled after it was given back\)/,
      ),
      { code: 'RL_ALREADY_SETTLED' },
    );
  });

  it('gives a decision back once: an undo again, or after its settle, gives back nothing more', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { limiter, used } = setup();
    const first = await limiter.consume('k', 10);
    await limiter.undo('k', 10, first);
    await limiter.undo('k', 10, first);
    expect(used()).toBe(0);
    await limiter.consume('k', 30); // another request's units, which a second give-back would erase
    const settled = await limiter.consume('k', 10);
    await limiter.settle('k', 10, 5, settled);
    await limiter.undo('k', 10, settled);
    expect(used()).toBe(35);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('settles nothing for a decision that charged nothing in the store: a denial, or a decision of the failure policy', async () => {
    const { limiter, store, settles } = setup('sync', { onStoreError: 'allow' });
    await limiter.consume('k', 100);
    const denied = await limiter.consume('k', 1);
    await limiter.settle('k', 1, 50, denied);
    store.failure = new Error('down');
    const failedOpen = await limiter.consume('other', 1);
    expect(failedOpen.reason).toBe('store-error');
    store.failure = undefined;
    await limiter.settle('other', 1, 50, failedOpen);
    expect(settles()).toBe(0);
  });

  it('refuses what it cannot settle, before any call: a bad actual cost, no decision, a concurrency limit, a store without settle', async () => {
    const { limiter, settles } = setup();
    const decision = await limiter.consume('k', 10);
    for (const bad of [-1, Number.NaN, Infinity, '5', null]) {
      await expect(limiter.settle('k', 10, bad as number, decision)).rejects.toMatchObject({
        code: 'RL_INVALID_COST',
        message: expect.stringMatching(/^Invalid actual cost/),
      });
    }
    await expect(limiter.settle('k', 10, 5, undefined as never)).rejects.toMatchObject({
      code: 'RL_INVALID_OPTION',
      field: 'limiter.settle.decision',
    });
    await expect(limiter.settle('', 10, 5, decision)).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
    const permits = createLimiter({ algorithm: concurrency({ limit: 2 }), store: new TestStore() });
    await expect(permits.settle('k', 1, 5, await permits.acquire('k'))).rejects.toMatchObject({
      code: 'RL_UNSUPPORTED',
    });
    const store = new TestStore();
    const bare = Object.create(store, {
      capabilities: { value: { ...store.capabilities, settle: false } },
    }) as TestStore;
    const old = createLimiter({ algorithm: hourly, store: bare, timeout: false });
    await expect(old.settle('k', 1, 5, await old.consume('k'))).rejects.toMatchObject({ code: 'RL_UNSUPPORTED' });
    expect(settles()).toBe(0);
  });

  it('a store that fails a settle: a storeError event, and the settle resolves (the estimate stands)', async () => {
    const { limiter, store, used } = setup('async');
    const errors: unknown[] = [];
    limiter.on('storeError', (event) => errors.push(event.action));
    const decision = await limiter.consume('k', 10);
    store.failure = new Error('down');
    await limiter.settle('k', 10, 40, decision);
    expect(errors).toEqual(['deny']);
    store.failure = undefined;
    expect(used()).toBe(10);
  });

  it("a give-back settle forgets the key's cached denial (the deny cache of a remote store)", async () => {
    const { limiter } = setup('async', { denyCache: true });
    const full = await limiter.consume('k', 100);
    expect((await limiter.consume('k', 1)).allowed).toBe(false);
    await limiter.settle('k', 100, 60, full);
    expect(await limiter.consume('k', 1)).toMatchObject({ allowed: true, remaining: 39 });
  });

  it('with a quota lease: a settle inside the live block its request was spent from takes no store call; after the block, the store settles it', async () => {
    const { limiter, settles, store, timers, clock } = setup('sync', {
      algorithm: tokenBucket({ capacity: 1000, refillRate: 1, interval: '1h' }),
      lease: { units: 50, ttl: '1s' },
    });
    const bucket = tokenBucket({ capacity: 1000, refillRate: 1, interval: '1h' });
    const decision = await limiter.consume('k', 5);
    await limiter.settle('k', 5, 25, decision);
    expect(settles()).toBe(0);
    // The block of 50 had 45 left; 20 more of it were spent by the settle: 25 left, 26 requests of 1 take a second block.
    const consumes = () => store.calls.filter((c) => c.startsWith('charge')).length;
    expect(consumes()).toBe(1);
    const late = await limiter.consume('k', 1);
    timers.advance(2_000);
    await limiter.settle('k', 1, 31, late);
    expect(settles()).toBe(1);
    // 50 leased (its unspent 24 given back at the ttl: 26 used), then 30 more settled in the store.
    expect(1000 - Math.ceil(store.state.peek('k', bucket, 0, clock()).remaining)).toBe(26 + 30);
  });

  it.each([
    [2, 98],
    [50, 50],
  ])(
    'with a quota lease: a charge above the block, made in the store alone, settles there as without a lease (actual %i: %i left)',
    async (actual, left) => {
      const log = slidingWindowLog({ limit: 100, window: '1m' });
      const { limiter, store, clock } = setup('sync', { algorithm: log, lease: { units: 5 } });
      const decision = await limiter.consume('k', 8);
      await limiter.settle('k', 8, actual, decision);
      expect(store.state.peek('k', log, 0, clock()).remaining).toBe(left);
    },
  );
});

describe('combined.settle', () => {
  it('settles every rate limit with one cost, or one per limiter; a denial settles nothing; a bad cost throws before any settle', async () => {
    const store = new TestStore();
    const users = createLimiter({ algorithm: hourly, store, prefix: 'user', clock: () => 0 });
    const tokens = createLimiter({
      algorithm: fixedWindow({ limit: 1000, window: '1h' }),
      store,
      prefix: 'tokens',
      clock: () => 0,
    });
    const group = combineLimiters([users, tokens]);
    const once = await group.consume('ann', [1, 100]);
    await once.settle([undefined, 250]);
    expect([(await users.peek('ann')).remaining, (await tokens.peek('ann')).remaining]).toEqual([99, 750]);
    const both = await group.consume('bob', 10);
    await both.settle(4);
    expect([(await users.peek('bob')).remaining, (await tokens.peek('bob')).remaining]).toEqual([96, 996]);
    expect(() => both.settle(-1)).toThrow(expect.objectContaining({ code: 'RL_INVALID_COST' }));
    expect(() => both.settle([1])).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'combined.settle.actualCost' }),
    );
    await users.consume('cy', 100);
    const denied = await group.consume('cy', 1);
    expect(denied.allowed).toBe(false);
    await denied.settle(50);
    expect((await tokens.peek('cy')).remaining).toBe(1000);
    expect(store.calls.filter((c) => c.startsWith('settle'))).toHaveLength(3);
  });
});

describe('settling a reservation', () => {
  it('is one charge with its cancel(): a settle after the cancel is ignored, a cancel after a settle gives nothing back', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const store = new TestStore();
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 10, window: '1m' }), store, clock: () => 1_000 });
    await limiter.consume('a', 4);
    const first = await limiter.reserve('a', 5, { maxDelay: '1s' });
    await first.cancel();
    await limiter.settle('a', 5, 11, first);
    expect((await limiter.peek('a')).remaining).toBe(6);
    expect(warn).toHaveBeenCalledWith(expect.any(String), { code: 'RL_ALREADY_SETTLED' });
    await limiter.consume('b', 4);
    const second = await limiter.reserve('b', 5, { maxDelay: '1s' });
    await limiter.settle('b', 5, 0, second);
    await second.cancel();
    expect((await limiter.peek('b')).remaining).toBe(6);
  });
});
