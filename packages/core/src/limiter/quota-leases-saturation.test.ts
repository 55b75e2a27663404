/**
 * Quota leases at saturation (issue 39): with the deny cache on (the default for a remote store), a
 * key whose block the store denied, or granted leaving less than a block, denies its requests locally
 * until the store would have the next block, and then asks once; a window's rest is asked for as a
 * block of what is there. Instances are limiters sharing one store; times are a fake clock that the
 * fake timers share.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../algorithm.js';
import { calendarWindow } from '../algorithms/calendar-window.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import type { Decision } from '../decision.js';
import type { Store } from '../store/interface.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';
import type { LimiterOptions } from './options.js';
import { lapses, refills } from './quota-leases-saturation.js';

/** One turn of the event loop: the answers given so far are read. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A bucket of 100 that brings back 100 a second (0.1 a ms): a block of 50 comes back in 500 ms. */
const bucket = tokenBucket({ capacity: 100, refillRate: 100 });

function setup(options: Partial<LimiterOptions> = {}) {
  const timers = new FakeTimers();
  const store = new TestStore({ answers: 'async' });
  const clock = (): number => timers.now();
  const limiter = (more: Partial<LimiterOptions> = {}) =>
    createLimiter({ algorithm: bucket, store, clock, timers, lease: { units: 50 }, ...options, ...more });
  const charges = () => store.calls.filter((c) => c.startsWith('charge')).length;
  return { timers, store, limiter, charges };
}

/** `n` requests one after another; the decisions. */
async function consumeEach(l: { consume(key: string): Promise<Decision> }, n: number): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < n; i++) decisions.push(await l.consume('k'));
  return decisions;
}

describe('a key whose blocks run out (token bucket of 100, 100 a second, lease of 50, a remote store)', () => {
  it('denies locally until the bucket has brought back a block, then asks once', async () => {
    const { timers, limiter, charges } = setup();
    const l = limiter();
    expect((await consumeEach(l, 99)).every((d) => d.allowed)).toBe(true);
    // A block of 50, then one of 49 asked ahead (1 left) that left the bucket 1 token: short of a block.
    expect(charges()).toBe(2);
    const denied = await consumeEach(l, 100);
    // The token left waits in the bucket for the next block: 49 more come back in 490 ms.
    expect(denied[0]).toMatchObject({
      allowed: false,
      reason: 'deny-cache',
      remaining: 0,
      retryAfterMs: 490,
      limit: 100,
      policy: bucket.policy,
    });
    expect(denied.every((d) => !d.allowed)).toBe(true);
    expect(charges()).toBe(2);
    timers.advance(489);
    expect(await l.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(charges()).toBe(2);
    timers.advance(1);
    // The next block is there: one call for 50 requests.
    expect((await consumeEach(l, 50)).every((d) => d.allowed)).toBe(true);
    expect(charges()).toBe(3);
    expect(await l.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(charges()).toBe(3);
  });

  it('a block the store denies: the key is denied until the store’s retry time, counted from its answer', async () => {
    const { timers, limiter, charges } = setup();
    const a = limiter();
    const b = limiter();
    await consumeEach(b, 99);
    timers.advance(100);
    // 11 tokens: a's block of 50 is denied, 39 come back in 390 ms.
    const denied = await consumeEach(a, 30);
    expect(denied[0]).toMatchObject({ allowed: false, reason: 'deny-cache', retryAfterMs: 390, remaining: 0 });
    expect(denied.every((d) => !d.allowed)).toBe(true);
    expect(charges()).toBe(2 + 1);
    timers.advance(390);
    expect(await a.consume('k')).toMatchObject({ allowed: true });
    expect(charges()).toBe(2 + 2);
  });

  it('without the deny cache (denyCache: false), each request no block serves is charged alone, as before', async () => {
    const { limiter, charges } = setup({ denyCache: false });
    const l = limiter();
    await consumeEach(l, 99);
    // A block of 50, one of 49 asked ahead at 1 left, and one more asked ahead at 1 left, denied.
    expect(charges()).toBe(3);
    const after = await consumeEach(l, 10);
    // The token the bucket had left charged alone; then the store's own denials.
    expect(after.map((d) => d.allowed)).toEqual([true, ...Array<boolean>(9).fill(false)]);
    expect(after.every((d) => d.reason === undefined)).toBe(true);
    expect(charges()).toBe(3 + 10);
  });

  it('reset(key) drops the denial: the next request asks the store', async () => {
    const { limiter, charges } = setup();
    const l = limiter();
    await consumeEach(l, 99);
    expect((await l.consume('k')).reason).toBe('deny-cache');
    await l.reset('k');
    const calls = charges();
    expect(await l.consume('k')).toMatchObject({ allowed: true, remaining: 99 });
    expect(charges()).toBe(calls + 1);
  });
});

describe('resets heard from the store', () => {
  /**
   * The test store with `watchResets`: `tell` plays the store telling its listeners, and a listener
   * added is told at once whether resets are heard (as the Redis store does).
   */
  function listening() {
    const { timers, store, charges } = setup();
    type Listener = (key: string | undefined, hearing?: boolean) => void;
    const listeners: Listener[] = [];
    let hearing = true;
    const watchResets = (listener: Listener) => {
      listeners.push(listener);
      listener(undefined, hearing);
    };
    const watched = Object.create(store, { watchResets: { value: watchResets } }) as Store;
    const clock = () => timers.now();
    const l = createLimiter({ algorithm: bucket, store: watched, clock, timers, lease: { units: 50 } });
    const tell = (key: string | undefined, heard?: boolean) => {
      hearing = heard !== false;
      for (const listener of listeners) listener(key, heard);
    };
    return { l, tell, charges };
  }

  it('a reset anywhere drops the key’s denial; so does "resets may have been missed", for every key', async () => {
    const { l, tell, charges } = listening();
    await consumeEach(l, 100);
    let calls = charges();
    expect((await l.consume('k')).reason).toBe('deny-cache');
    expect(charges()).toBe(calls);
    for (const told of ['k', undefined]) {
      tell(told);
      calls = charges();
      // A block is asked again (and denied: the bucket is still short).
      expect(await l.consume('k')).toMatchObject({ allowed: false });
      expect(charges()).toBe(calls + 1);
    }
  });

  it('while the store cannot hear resets, no denial is repeated: requests are charged alone', async () => {
    const { l, tell, charges } = listening();
    await consumeEach(l, 100);
    tell(undefined, false);
    const calls = charges();
    const deaf = await consumeEach(l, 5);
    // The denial forgotten, a block is asked again (denied); then each request is charged alone: the
    // token left, and the store's denials (the deny cache is deaf too).
    expect(deaf.map((d) => d.allowed)).toEqual([true, false, false, false, false]);
    expect(deaf.every((d) => d.reason === undefined)).toBe(true);
    expect(charges()).toBe(calls + 1 + 5);
    tell(undefined);
    // Hearing again: the next block's denial is repeated locally.
    await consumeEach(l, 1);
    const heard = charges();
    expect((await consumeEach(l, 5)).every((d) => d.reason === 'deny-cache')).toBe(true);
    expect(charges()).toBe(heard);
  });
});

describe('a window at its end (100 a minute, lease of 30)', () => {
  it('asks for its rest as a block of what is there: the window admits its limit, then nothing is asked until it ends', async () => {
    const timers = new FakeTimers();
    const store = new TestStore({ answers: 'async' });
    const perMinute = fixedWindow({ limit: 100, window: '1m' });
    const clock = () => timers.now();
    const options: LimiterOptions = { algorithm: perMinute, store, clock, timers, lease: { units: 30, ttl: '1m' } };
    const a = createLimiter(options);
    const b = createLimiter(options);
    // a takes a block of 30 and one of 29 (asked at 1 left), and holds 19 of them.
    const as = await consumeEach(a, 40);
    timers.advance(1000);
    // b takes 30 and asks for 29 more, denied with 11 left: it asks for those 11.
    const bs = await consumeEach(b, 45);
    expect(bs.filter((d) => d.allowed)).toHaveLength(41);
    expect(bs[41]).toMatchObject({ allowed: false, reason: 'deny-cache', remaining: 0, retryAfterMs: 59_000 });
    const more = await consumeEach(a, 25);
    const admitted = [...as, ...bs, ...more].filter((d) => d.allowed).length;
    expect(admitted).toBe(100);
    const calls = store.calls.length;
    expect((await consumeEach(a, 5)).every((d) => d.reason === 'deny-cache')).toBe(true);
    expect((await consumeEach(b, 5)).every((d) => d.reason === 'deny-cache')).toBe(true);
    expect(store.calls.length).toBe(calls);
    timers.advance(59_000);
    expect(await b.consume('k')).toMatchObject({ allowed: true });
  });
});

/**
 * Four instances, each with `perMs` requests every millisecond on one key, on a store that answers
 * within the millisecond; for `ms` milliseconds. The admitted decisions with the time they were
 * answered, and the store calls.
 */
async function saturate(algorithm: Algorithm, ms: number, lease: boolean) {
  const timers = new FakeTimers();
  const store = new TestStore({ answers: 'manual' });
  const clock = (): number => timers.now();
  const instances = Array.from({ length: 4 }, () =>
    createLimiter({ algorithm, store, clock, timers, timeout: false, ...(lease && { lease: { units: 50 } }) }),
  );
  const admitted: { t: number; at: number }[] = [];
  for (let t = 0; t < ms; t++) {
    for (const l of instances)
      for (let i = 0; i < 5; i++)
        void l.consume('k').then((d) => void (d.allowed && admitted.push({ t: timers.now(), at: d.at })));
    for (let turn = 0; turn < 3; turn++) {
      await tick();
      store.answerAll();
    }
    await tick();
    timers.advance(1);
  }
  return { admitted, calls: store.calls.filter((c) => c.startsWith('charge')).length };
}

/** How many of `times` (ascending) fall in the fullest span `[s, s + spanMs)`. */
function fullestSpan(times: number[], spanMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && times[j]! < times[i]! + spanMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

describe('four instances at saturation on one key, lease of 50 (each about 1000 units a second, 200 at once)', () => {
  const MS = 2000;

  it.each([
    ['token bucket', tokenBucket({ capacity: 200, refillRate: 1000 })],
    ['leaky bucket (meter)', leakyBucket({ capacity: 200, leakRate: 1000 })],
  ])(
    '%s: at most capacity + rate × t by any time t, about instances / units calls per admitted request',
    async (_, algorithm) => {
      const { admitted, calls } = await saturate(algorithm, MS, true);
      for (let i = 0; i < admitted.length; i++) expect(i + 1).toBeLessThanOrEqual(200 + admitted[i]!.t);
      // Under-admission: a block per instance held, and less than a block waiting in the bucket.
      expect(admitted.length).toBeGreaterThanOrEqual(200 + MS - 5 * 50);
      // One ask per instance per block given out (0.08), and the first asks.
      expect(calls / admitted.length).toBeLessThanOrEqual(0.085);
    },
  );

  it('fixed window: at most the limit in each window, about two asks per instance per window beside the blocks', async () => {
    const { admitted, calls } = await saturate(fixedWindow({ limit: 200, window: 200 }), MS, true);
    const perWindow = new Map<number, number>();
    for (const { at } of admitted) perWindow.set(Math.floor(at / 200), (perWindow.get(Math.floor(at / 200)) ?? 0) + 1);
    expect([...perWindow.values()].every((n) => n === 200)).toBe(true);
    expect(calls / admitted.length).toBeLessThanOrEqual(0.05);
  });

  it('sliding window log: at most the limit and a block per instance in any window', async () => {
    const { admitted, calls } = await saturate(slidingWindowLog({ limit: 200, window: 200 }), MS, true);
    expect(
      fullestSpan(
        admitted.map((a) => a.t),
        200,
      ),
    ).toBeLessThanOrEqual(200 + 4 * 50);
    expect(admitted.length).toBeGreaterThanOrEqual(MS - 4 * 50);
    expect(calls / admitted.length).toBeLessThanOrEqual(0.085);
  });

  it('sliding window counter: never more than the limit per aligned window it charged in', async () => {
    const { admitted, calls } = await saturate(slidingWindowCounter({ limit: 200, window: 200 }), MS, true);
    for (let i = 0; i < admitted.length; i++)
      expect(i + 1).toBeLessThanOrEqual(200 * (Math.floor(admitted[i]!.t / 200) + 1));
    expect(calls / admitted.length).toBeLessThanOrEqual(0.1);
  });

  it('without a lease each admitted request is at least one store call (the comparison)', async () => {
    const { admitted, calls } = await saturate(tokenBucket({ capacity: 200, refillRate: 1000 }), 200, false);
    expect(calls / admitted.length).toBeGreaterThanOrEqual(1);
  });
});

describe('strict with local denials (property)', () => {
  it('token bucket, 3 instances on a store answered at random turns: by any time t at most capacity + rate × t', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            instance: fc.nat(2),
            gap: fc.nat(15),
            burst: fc.integer({ min: 1, max: 8 }),
            answer: fc.boolean(),
          }),
          { minLength: 20, maxLength: 200 },
        ),
        fc.integer({ min: 1, max: 20 }),
        async (steps, units) => {
          const timers = new FakeTimers();
          const store = new TestStore({ answers: 'manual' });
          const clock = (): number => timers.now();
          const algorithm = tokenBucket({ capacity: 20, refillRate: 100 });
          const instances = Array.from({ length: 3 }, () =>
            createLimiter({ algorithm, store, clock, timers, timeout: false, lease: { units } }),
          );
          const times: number[] = [];
          const pending: Promise<void>[] = [];
          for (const { instance, gap, burst, answer } of steps) {
            timers.advance(gap);
            for (let i = 0; i < burst; i++)
              pending.push(instances[instance]!.consume('k').then((d) => void (d.allowed && times.push(timers.now()))));
            if (answer) store.answerAll();
            await tick();
          }
          for (let turn = 0; turn < 20 && store.pending.length > 0; turn++) {
            store.answerAll();
            await tick();
          }
          await Promise.all(pending);
          times.sort((a, b) => a - b);
          for (let i = 0; i < times.length; i++) expect(i + 1).toBeLessThanOrEqual(Math.floor(20 + 0.1 * times[i]!));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('how the quota comes back, read from leaseHoldMs', () => {
  it.each([
    { name: 'fixed window', algorithm: fixedWindow({ limit: 10, window: '1m' }), lapsing: true, refilling: false },
    {
      name: 'calendar window',
      algorithm: calendarWindow({ limit: 10, period: 'day' }),
      lapsing: true,
      refilling: false,
    },
    { name: 'token bucket', algorithm: tokenBucket({ capacity: 10, refillRate: 1 }), lapsing: false, refilling: true },
    { name: 'leaky bucket', algorithm: leakyBucket({ capacity: 10, leakRate: 1 }), lapsing: false, refilling: true },
    { name: 'sliding log', algorithm: slidingWindowLog({ limit: 10, window: '1m' }), lapsing: false, refilling: false },
    {
      name: 'sliding counter',
      algorithm: slidingWindowCounter({ limit: 10, window: '1m' }),
      lapsing: false,
      refilling: false,
    },
  ])(
    '$name: lapses at a window end $lapsing, refills at a steady pace $refilling',
    ({ algorithm, lapsing, refilling }) => {
      for (const at of [0, 1, 59_999, 60_000, 1_700_000_123_456]) {
        expect(lapses(algorithm, at, 5)).toBe(lapsing);
        expect(refills(algorithm, at, 5)).toBe(refilling);
      }
    },
  );
});
