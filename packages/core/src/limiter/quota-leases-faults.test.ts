/**
 * Quota leases under faults and races, each the case an adversarial review found: a store that fails
 * or times out while a block is asked for (every failure policy), close() and reset(key) with a
 * block in flight, plans that change while a block is in flight, give-backs of an old plan, the
 * `maxKeys` bound, a block that comes after its window, bursts behind one block; then a seeded
 * simulation of everything together on a fixed window.
 */
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import type { Decision } from '../decision.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore, type TestStoreAnswers } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';
import type { LimiterOptions } from './options.js';

const perMinute = fixedWindow({ limit: 100, window: '1m' });

/** One turn of the event loop: the answers given so far are read. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Fake time, a store that answers as `answers` says, and limiters on both: `leased` with a lease of
 * 10 units on `perMinute`, `plain` without one (options override either).
 */
function setup(answers: TestStoreAnswers = 'sync') {
  const timers = new FakeTimers();
  const clock = (): number => timers.now();
  const store = new TestStore({ answers });
  const plain = (options: Partial<LimiterOptions> = {}) =>
    createLimiter({ algorithm: perMinute, store, clock, timers, ...options });
  const leased = (options: Partial<LimiterOptions> = {}) => plain({ lease: { units: 10 }, ...options });
  return { timers, clock, store, plain, leased };
}

/** Answers a manual store's calls, a turn at a time, until `pending` settles (at most `rounds` turns); whether it did. */
async function answerUntil(store: TestStore, pending: Promise<unknown>, rounds = 10): Promise<boolean> {
  let settled = false;
  void pending.then(() => (settled = true));
  for (let i = 0; i < rounds && !settled; i++) {
    store.answerAll();
    await tick();
  }
  return settled;
}

/** A linear congruential generator: the simulation's runs are the same on every machine. */
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

describe('quota leases under faults', () => {
  it('onStoreError fallback: a block the store fails charges the fallback nothing; each request is charged in it once', () => {
    const { timers, clock, store, leased } = setup();
    const fallback = createLimiter({ algorithm: perMinute, store: new TestStore(), clock, timers });
    const l = leased({ onStoreError: { fallback } });
    store.failure = new Error('down');
    let allowed = 0;
    for (let i = 0; i < 100; i++) {
      if (l.consumeSync('k').allowed) allowed++;
      timers.advance(1);
    }
    // Without lease the fallback would admit 100 of 100.
    expect(allowed).toBe(100);
  });

  it('deny policy with a timeout: a request whose block times out waits one timeout and is one failure', async () => {
    const { timers, store, leased } = setup('manual');
    const events: unknown[] = [];
    const l = leased({ timeout: 50 });
    l.on('storeError', (e) => events.push(e));
    let done = false;
    const p = l.consume('k').then((d) => {
      done = true;
      return d;
    });
    await timers.advanceAsync(50);
    const afterOne = done;
    await timers.advanceAsync(60);
    await p;
    expect({ afterOne, storeErrors: events.length, calls: store.calls }).toEqual({
      afterOne: true,
      storeErrors: 1,
      calls: ['charge k'],
    });
  });

  it('allow policy with a timeout: a request whose block times out is answered by the policy, no block is asked again at once', async () => {
    const { timers, store, leased } = setup('manual');
    const l = leased({ timeout: 60, storeRetryInterval: 100, onStoreError: 'allow' });
    let done = false;
    void l.consume('k').then(() => {
      done = true;
    });
    for (let i = 0; i < 50; i++) await timers.advanceAsync(60);
    expect({ done, calls: store.calls.length }).toEqual({ done: true, calls: 1 });
  });

  it('close() waits for a block in flight and gives it back', async () => {
    const { store, leased } = setup('manual');
    const l = leased({ timeout: false });
    const p = l.consume('k');
    expect(store.calls).toEqual(['charge k']);
    let closed = false;
    const c = l.close().then(() => {
      closed = true;
    });
    await tick();
    const closedBeforeAnswer = closed;
    store.answerAll(); // the block is granted now
    await tick();
    store.answerAll();
    await p;
    await c;
    // close() claimed everything was given back while 10 units were still out
    expect(closedBeforeAnswer).toBe(false);
  });

  it('maxKeys: a new key evicts an idle one, not only the oldest', () => {
    const { store, plain, leased } = setup();
    const other = plain();
    for (let i = 0; i < 100; i++) other.consumeSync('idle');
    const l = leased({ lease: { units: 10, maxKeys: 2 } });
    l.consumeSync('hot'); // entry 1 (oldest), holds a block
    expect(l.consumeSync('idle').allowed).toBe(false); // entry 2, holds nothing
    const before = store.calls.length;
    for (let i = 0; i < 20; i++) l.consumeSync('c');
    // c should evict the idle entry and lease: ~3 store calls, not 20
    expect(store.calls.length - before).toBeLessThanOrEqual(3);
  });

  it("a give-back of an old plan's decision does not go into the new plan's block", async () => {
    const { leased } = setup();
    const bucket = tokenBucket({ capacity: 10, refillRate: 1, interval: '1h' });
    const l = leased({ lease: { units: 5 } });
    const d = l.consumeSync('k'); // from a fixed-window block
    expect(l.consumeSync('k', 1, bucket).allowed).toBe(true); // plan changed: the fixed-window entry is dropped
    await l.undo('k', 1, perMinute, d); // refund: into the bucket entry
    let admitted = 1;
    while (l.consumeSync('k', 1, bucket).allowed) admitted++;
    expect(admitted).toBeLessThanOrEqual(10); // capacity 10
  });

  it('reset(key) drops the blocks held: never more than the limit after it', async () => {
    const { leased } = setup();
    const l = leased();
    l.consumeSync('k');
    await l.reset('k');
    let admitted = 0;
    while (l.consumeSync('k').allowed) admitted++;
    expect(admitted).toBeLessThanOrEqual(100);
  });

  it('after reset(key), the pre-reset block is not given back into the new state at its ttl', async () => {
    const { timers, plain, leased } = setup();
    const l = leased({ lease: { units: 10, ttl: '1s' } });
    const other = plain();
    l.consumeSync('k');
    await l.reset('k');
    let admitted = 0;
    while (other.consumeSync('k').allowed) admitted++;
    timers.advance(1000); // l gives back 9 units of the pre-reset block
    while (other.consumeSync('k').allowed) admitted++;
    expect(admitted).toBeLessThanOrEqual(100);
  });

  it('a block in flight across reset(key) is dropped when it comes, not given back into the new state', async () => {
    const { store, plain, leased } = setup('manual');
    store.holdResets = true;
    const l = leased({ timeout: false, denyCache: false });
    const other = plain({ timeout: false, denyCache: false });
    const first = l.consume('k'); // block of 10 asked (pre-reset)
    const reset = l.reset('k'); // forget() now, the store resets after the block
    const others = Array.from({ length: 100 }, () => other.consume('k')); // 100 in the new state
    store.answerAll(); // order: block (old state), reset, 100 consumes
    await reset;
    await Promise.all(others);
    await tick();
    await answerUntil(store, first);
    await tick();
    store.answerAll();
    let admitted = (await Promise.all(others)).filter((d) => d.allowed).length + ((await first).allowed ? 1 : 0);
    for (let i = 0; i < 20; i++) {
      const p = l.consume('k');
      await answerUntil(store, p);
      if ((await p).allowed) admitted++;
    }
    // in the window after the reset: at most the limit
    expect(admitted).toBeLessThanOrEqual(100);
  });

  it('two plans of one key in flight at once both settle, in one call each', async () => {
    const { store, leased } = setup('manual');
    const free = fixedWindow({ limit: 100, window: '1m' });
    const pro = fixedWindow({ limit: 1000, window: '1m' });
    const l = leased({ algorithm: undefined, timeout: false });
    let settled = 0;
    void l.consume('k', 1, free).then(() => settled++);
    void l.consume('k', 1, pro).then(() => settled++);
    for (let i = 0; i < 100; i++) {
      store.answerAll();
      await tick();
    }
    expect({ settled, calls: store.calls.length }).toEqual({ settled: 2, calls: 2 });
  });
});

describe('quota leases, from a second review', () => {
  it('a block that comes after its window ended is never spent: requests of the new window are counted in it', async () => {
    const { timers, store, plain, leased } = setup('manual');
    const perSecond = fixedWindow({ limit: 100, window: '1s' });
    const a = leased({ algorithm: perSecond, timeout: false });
    const b = plain({ algorithm: perSecond, timeout: false, denyCache: false });
    timers.advance(990);
    const first = a.consume('k');
    timers.advance(15);
    const late = Array.from({ length: 9 }, () => a.consume('k'));
    const others = Array.from({ length: 100 }, () => b.consume('k'));
    for (let i = 0; i < 6; i++) {
      store.answerAll();
      await tick();
    }
    const inWindowOne = [...(await Promise.all(late)), ...(await Promise.all(others))].filter((d) => d.allowed).length;
    expect(inWindowOne).toBeLessThanOrEqual(100);
    await first;
  });

  it('a request waits for two blocks at most: 200 requests behind one key settle within three answers of the store', async () => {
    const { store, leased } = setup('manual');
    const l = leased({ algorithm: fixedWindow({ limit: 10_000, window: '1m' }), timeout: false });
    let settled = 0;
    const all = Array.from({ length: 200 }, () => l.consume('k').then((d) => (settled++, d)));
    for (let i = 0; i < 3; i++) {
      store.answerAll();
      for (let j = 0; j < 3; j++) await tick();
    }
    expect(settled).toBe(200);
    expect((await Promise.all(all)).every((d) => d.allowed)).toBe(true);
  });

  it("leaseUnits stays the store's count: a block that comes after close() began is told leased, then returned", async () => {
    const { timers, store, leased } = setup('manual');
    const units = { leased: 0, returned: 0 };
    const l = leased({ timeout: false, observer: { leaseUnits: (e) => void (units[e.action] += e.units) } });
    const pending = l.consume('k');
    const closed = l.close();
    for (let i = 0; i < 5; i++) {
      store.answerAll();
      await tick();
    }
    await Promise.all([pending, closed]);
    expect(units).toEqual({ leased: 10, returned: 10 });
    expect(100 - store.state.peek('k', perMinute, 0, timers.now()).remaining).toBe(1);
  });
});

describe('quota leases, everything at once', () => {
  it('a fixed window never admits more than its limit: 1-4 instances on async and manual stores, costs, give-backs, close() and ttl (200 seeded runs)', async () => {
    const W = 1000;
    const LIMIT = 50;
    const alg = fixedWindow({ limit: LIMIT, window: W });
    for (let seed = 1; seed <= 200; seed++) {
      const r = rng(seed);
      const { timers, clock, store, plain } = setup(r() < 0.5 ? 'async' : 'manual');
      const make = () =>
        plain({
          algorithm: alg,
          timeout: false,
          lease: { units: 1 + Math.floor(r() * 10), ttl: 1 + Math.floor(r() * 1500) },
        });
      const ls = Array.from({ length: 1 + Math.floor(r() * 4) }, make);
      const perWindow = new Map<number, number>();
      const admitted: { l: number; cost: number; d: Decision; w: number }[] = [];
      const pending: Promise<void>[] = [];
      for (let step = 0; step < 150; step++) {
        const x = r();
        if (x < 0.55) {
          const i = Math.floor(r() * ls.length);
          const cost = r() < 0.8 ? 1 : 1 + Math.floor(r() * 6);
          pending.push(
            ls[i]!.consume('k', cost).then((d) => {
              if (!d.allowed) return;
              const w = Math.floor(d.at / W);
              perWindow.set(w, (perWindow.get(w) ?? 0) + cost);
              admitted.push({ l: i, cost, d, w });
            }),
          );
        } else if (x < 0.7) {
          store.answerAll();
          await tick();
        } else if (x < 0.85) {
          store.answerAll();
          await tick();
          await timers.advanceAsync(Math.floor(r() * 300));
        } else if (x < 0.93 && admitted.length > 0) {
          const a = admitted.splice(Math.floor(r() * admitted.length), 1)[0]!;
          // undo only within the window of its charge, at once
          if (Math.floor(clock() / W) === a.w) {
            perWindow.set(a.w, perWindow.get(a.w)! - a.cost);
            pending.push(ls[a.l]!.undo('k', a.cost, a.d));
          }
        } else if (x < 0.96) {
          const i = Math.floor(r() * ls.length);
          pending.push(ls[i]!.close());
          ls[i] = make();
        }
      }
      if (!(await answerUntil(store, Promise.all(pending), 200))) {
        throw new Error(
          `seed ${seed}: requests never settle; store calls ${store.calls.length}, pending ${store.pending.length}`,
        );
      }
      for (const [w, n] of perWindow) if (n > LIMIT) throw new Error(`seed ${seed} window ${w}: ${n} > ${LIMIT}`);
    }
  });
});
