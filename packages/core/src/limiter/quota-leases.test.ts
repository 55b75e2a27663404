/**
 * Quota leases (`lease: { units, ttl }`): blocks taken in one store call and spent locally, strict
 * across instances, given back at the ttl, at close and once the shared quota is gone; what the
 * observers and the engine see. Instances are limiters sharing one store; times are a fake clock
 * that the fake timers share.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { combineLimiters } from '../compose/group.js';
import type { Decision } from '../decision.js';
import type { LeaseUnitsEvent } from '../observe/observer.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter, type Limiter } from './limiter.js';
import type { LimiterOptions } from './options.js';

const perSecond = fixedWindow({ limit: 100, window: '1s' });

function setup(answers: 'sync' | 'async' = 'sync') {
  const timers = new FakeTimers();
  const store = new TestStore({ answers });
  const clock = (): number => timers.now();
  const limiter = (options: Partial<LimiterOptions> = {}) =>
    createLimiter({ algorithm: perSecond, store, clock, timers, lease: { units: 10 }, ...options });
  const consumes = () => store.calls.filter((c) => c.startsWith('charge')).length;
  const undos = () => store.calls.filter((c) => c.startsWith('giveBack')).length;
  const used = (key = 'k') => 100 - store.state.peek(key, perSecond, 0, clock()).remaining;
  return { timers, store, clock, limiter, consumes, undos, used };
}

/** `count` requests of `k` issued together (in one turn) on `limiter`: every one admitted. */
async function expectAllAdmitted(limiter: Limiter, count: number): Promise<void> {
  const decisions = await Promise.all(Array.from({ length: count }, () => limiter.consume('k')));
  expect(decisions.every((d) => d.allowed)).toBe(true);
}

describe('a lease of 10 units on a fixed window of 100 per second', () => {
  it('admits 100 requests from 10 blocks, then denies with the store, each block one store call', () => {
    const { limiter, consumes, used } = setup();
    const l = limiter();
    const decisions = Array.from({ length: 100 }, () => l.consumeSync('k'));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // 10 blocks of 10: a store that answers at once keeps no request waiting, so no block is asked ahead.
    expect(consumes()).toBe(10);
    expect(used()).toBe(100);
    // Remaining: the store's after the last block plus this instance's own unspent units (one instance: as without a lease).
    expect(decisions.slice(0, 3).map((d) => d.remaining)).toEqual([99, 98, 97]);
    expect(decisions[99]!.remaining).toBe(0);
    const denied = l.consumeSync('k');
    expect(denied).toMatchObject({ allowed: false, remaining: 0 });
    expect(denied.retryAfterMs).toBe(1000);
    // The 11th block, and the request alone.
    expect(consumes()).toBe(12);
  });

  it('is asynchronous on a remote store: requests behind a block in flight wait for it (one call, not one each)', async () => {
    const { limiter, consumes } = setup('async');
    const l = limiter();
    await expectAllAdmitted(l, 8);
    // 8 units asked during the block's round trip, more than a quarter of it: the next is asked only once a request finds too little.
    expect(consumes()).toBe(1);
  });

  it('more requests in flight than a block holds: those the block cannot serve wait for the next (once); beyond two blocks they go alone', async () => {
    const { limiter, store } = setup('async');
    const l = limiter();
    await expectAllAdmitted(l, 20);
    // Blocks of 10 (the second asked when the first came, a third at half a block left): no request went to the store alone.
    expect(store.calls.filter((c) => c === 'charge k').length).toBeLessThanOrEqual(3);
    await expectAllAdmitted(l, 35);
    // A request waits two blocks at most (the store's timeout still bounds its wait): the rest are charged alone.
    expect(store.calls.filter((c) => c === 'charge k').length).toBeLessThanOrEqual(3 + 2 + 15 + 1);
  });

  it('never spends a unit of one window in the next: a block ends with its window', () => {
    const { timers, limiter, used } = setup();
    const l = limiter();
    timers.advance(990);
    for (let i = 0; i < 3; i++) l.consumeSync('k');
    expect(used()).toBe(10);
    timers.advance(10);
    // A new window: a new block, counted in it.
    expect(l.consumeSync('k').allowed).toBe(true);
    expect(used()).toBe(10);
  });

  it('gives back unused units at the ttl (a live holder, with no request)', () => {
    const { timers, store, clock, limiter, undos } = setup();
    const minute = fixedWindow({ limit: 100, window: '1m' });
    const l = limiter({ algorithm: minute, lease: { units: 10, ttl: 200 } });
    l.consumeSync('k');
    expect(100 - store.state.peek('k', minute, 0, clock()).remaining).toBe(10);
    timers.advance(199);
    expect(undos()).toBe(0);
    timers.advance(1);
    expect(undos()).toBe(1);
    expect(100 - store.state.peek('k', minute, 0, clock()).remaining).toBe(1);
  });

  it('gives back what it holds at close(), and charges the store alone afterwards', async () => {
    const { limiter, used, consumes } = setup();
    const l = limiter();
    l.consumeSync('k');
    l.consumeSync('other');
    expect(used()).toBe(10);
    await l.close();
    expect(used()).toBe(1);
    expect(used('other')).toBe(1);
    const before = consumes();
    l.consumeSync('k');
    expect(consumes()).toBe(before + 1);
    expect(used()).toBe(2);
  });

  it("reset(key) drops the key's blocks: its next request takes a block of the new state", async () => {
    const { limiter, used, consumes } = setup();
    const l = limiter();
    for (let i = 0; i < 3; i++) l.consumeSync('k');
    await l.reset('k');
    expect(used()).toBe(0);
    const before = consumes();
    expect(l.consumeSync('k').remaining).toBe(99);
    expect(consumes()).toBe(before + 1);
    expect(used()).toBe(10);
  });

  it('charges a request costing more than a block alone', () => {
    const { limiter, consumes, used } = setup();
    const l = limiter();
    expect(l.consumeSync('k', 30).allowed).toBe(true);
    expect(consumes()).toBe(1);
    expect(used()).toBe(30);
  });

  it('near the end of the quota: a block that is denied falls back to the request alone; its denial gives back what is held', () => {
    const { limiter, used } = setup();
    const a = limiter();
    const b = limiter();
    for (let i = 0; i < 95; i++) a.consumeSync('k');
    // a holds 5 of the 100; b's block of 10 does not fit, its single units do.
    expect(used()).toBe(100);
    for (let i = 0; i < 5; i++) expect(b.consumeSync('k', 1).allowed).toBe(false);
    expect(used()).toBe(100);
    // a spends its own 5 locally.
    for (let i = 0; i < 5; i++) expect(a.consumeSync('k').allowed).toBe(true);
    expect(a.consumeSync('k').allowed).toBe(false);
  });

  it('a variable cost denied by the store gives back the units the key holds: they are not lost to the others', () => {
    const { limiter, used } = setup();
    const a = limiter();
    const b = limiter();
    for (let i = 0; i < 91; i++) b.consumeSync('k');
    // b holds 9 (took 100); a's block is denied and its own 5 are too: b gives back nothing yet.
    expect(a.consumeSync('k', 5).allowed).toBe(false);
    expect(b.consumeSync('k', 9).allowed).toBe(true);
    expect(used()).toBe(100);
    b.consumeSync('k', 1);
    for (let i = 0; i < 3; i++) b.consumeSync('k', 2);
    expect(used()).toBe(100);
  });
});

describe('blocks that top the holding up to units (issue 37, item 6)', () => {
  /** One turn of the event loop: the answers given so far are read. */
  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it('a light key asks for the next block ahead: after the first, no request waits for the store, and no block tops it above units', async () => {
    const timers = new FakeTimers();
    const store = new TestStore({ answers: 'manual' });
    const leased: number[] = [];
    const l = createLimiter({
      algorithm: perSecond,
      store,
      clock: () => timers.now(),
      timers,
      timeout: false,
      lease: { units: 10 },
      observer: { leaseUnits: (e) => void (e.action === 'leased' && leased.push(e.units)) },
    });
    const waited: number[] = [];
    for (let i = 1; i <= 40; i++) {
      let answered = false;
      const decision = l.consume('k').then((d) => ((answered = true), d));
      await tick();
      if (!answered) waited.push(i);
      // The store answers within the gap to the next request (one request per round trip).
      store.answerAll();
      expect((await decision).allowed).toBe(true);
      await tick();
    }
    expect(waited).toEqual([1]);
    // 10, then 9 each time one unit is left (the asking request's round trip asked 1: ahead at 2 left).
    expect(leased).toEqual([10, 9, 9, 9, 9]);
  });

  it('a busy key (a quarter of units or more asked during a round trip) asks once a request finds too little: each block is units', async () => {
    const store = new TestStore({ answers: 'manual' });
    const leased: number[] = [];
    const l = createLimiter({
      algorithm: fixedWindow({ limit: 1000, window: '1h' }),
      store,
      clock: () => 0,
      timeout: false,
      lease: { units: 20 },
      observer: { leaseUnits: (e) => void (e.action === 'leased' && leased.push(e.units)) },
    });
    for (let round = 0; round < 6; round++) {
      const burst = Promise.all(Array.from({ length: 10 }, () => l.consume('k')));
      for (let turn = 0; turn < 5; turn++) {
        store.answerAll();
        await tick();
      }
      expect((await burst).every((d) => d.allowed)).toBe(true);
    }
    expect(leased).toEqual([20, 20, 20]);
  });

  /** One step of a holder's life: a request of `cost`, time passing, the store answering everything, or a give-back of an earlier admitted request. */
  const step = fc.oneof(
    fc.record({ op: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 24 }) }),
    fc.record({ op: fc.constant('advance' as const), ms: fc.nat(400) }),
    fc.record({ op: fc.constant('answer' as const) }),
    fc.record({ op: fc.constant('undo' as const), pick: fc.nat() }),
  );

  it.each(['sync', 'manual'] as const)(
    'never more than units: whenever the %s store has answered every call, it charged at most units more than the holder admitted (property)',
    async (answers) => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 1, max: 3000 }),
          fc.array(step, { minLength: 1, maxLength: 150 }),
          async (units, ttlMs, steps) => {
            const timers = new FakeTimers();
            const store = new TestStore({ answers });
            const clock = (): number => timers.now();
            const algorithm = fixedWindow({ limit: 150, window: '1h' });
            const holder = createLimiter({
              algorithm,
              store,
              clock,
              timers,
              timeout: false,
              lease: { units, ttl: ttlMs },
            });
            let admitted = 0;
            // Requests whose decision the test has not heard yet: one admitted from a block is spent
            // before its promise settles, and counting the block's units without it would see one too many.
            let deciding = 0;
            const given: { cost: number; decision: Decision }[] = [];
            const settle = async (): Promise<void> => {
              for (let turn = 0; turn < 20 && (turn === 0 || store.pending.length > 0); turn++) {
                if (answers === 'manual') store.answerAll();
                await new Promise((resolve) => setImmediate(resolve));
              }
            };
            for (const s of steps) {
              if (s.op === 'consume') {
                deciding++;
                void holder.consume('k', s.cost).then((decision) => {
                  deciding--;
                  if (!decision.allowed) return;
                  admitted += s.cost;
                  given.push({ cost: s.cost, decision });
                });
              } else if (s.op === 'advance') timers.advance(s.ms);
              else if (s.op === 'undo' && given.length > 0) {
                const [back] = given.splice(s.pick % given.length, 1);
                admitted -= back!.cost;
                void holder.undo('k', back!.cost, back!.decision);
              }
              if (s.op === 'answer' || answers === 'sync') await settle();
              else await new Promise((resolve) => setImmediate(resolve));
              if (store.pending.length > 0 || deciding > 0) continue;
              // Nothing in flight: what the store charged and the holder did not admit is what it holds unspent.
              const held = 150 - store.state.peek('k', algorithm, 0, clock()).remaining - admitted;
              expect(held).toBeGreaterThanOrEqual(0);
              expect(held).toBeLessThanOrEqual(units);
            }
          },
        ),
        { numRuns: 150 },
      );
    },
  );
});

describe('strict across instances', () => {
  it('fixed window: never more than the limit in any window; under-admission at most instances × units (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ instance: fc.nat(3), gap: fc.nat(40), cost: fc.integer({ min: 1, max: 3 }) }), {
          minLength: 50,
          maxLength: 400,
        }),
        fc.integer({ min: 1, max: 30 }),
        (requests, units) => {
          const timers = new FakeTimers();
          const store = new TestStore();
          const clock = (): number => timers.now();
          const limit = 60;
          const algorithm = fixedWindow({ limit, window: '1s' });
          const instances = Array.from({ length: 4 }, () =>
            createLimiter({ algorithm, store, clock, timers, lease: { units, ttl: '10s' } }),
          );
          const admitted = new Map<number, number>();
          const denied = new Map<number, number>();
          for (const { instance, gap, cost } of requests) {
            timers.advance(gap);
            const window = Math.floor(timers.now() / 1000);
            const d = instances[instance]!.consumeSync('k', cost);
            const into = d.allowed ? admitted : denied;
            into.set(window, (into.get(window) ?? 0) + cost);
          }
          for (const [window, count] of admitted) {
            expect(count).toBeLessThanOrEqual(limit);
            // A denial of cost c means at least limit - c + 1 units were charged, some of them held, unspent, by up to 4 holders.
            if ((denied.get(window) ?? 0) > 0) expect(count).toBeGreaterThanOrEqual(limit - 3 + 1 - 4 * units);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('token bucket: in any span T at most capacity + rate × T + one block (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ instance: fc.nat(2), gap: fc.nat(30) }), { minLength: 50, maxLength: 300 }),
        fc.integer({ min: 1, max: 10 }),
        (requests, units) => {
          const timers = new FakeTimers();
          const store = new TestStore();
          const clock = (): number => timers.now();
          const algorithm = tokenBucket({ capacity: 20, refillRate: 100 });
          const instances = Array.from({ length: 3 }, () =>
            createLimiter({ algorithm, store, clock, timers, lease: { units, ttl: '10s' } }),
          );
          const times: number[] = [];
          for (const { instance, gap } of requests) {
            timers.advance(gap);
            if (instances[instance]!.consumeSync('k').allowed) times.push(timers.now());
          }
          for (let i = 0; i < times.length; i++) {
            for (let j = i; j < times.length; j++) {
              const span = times[j]! - times[i]!;
              expect(j - i + 1).toBeLessThanOrEqual(Math.floor(20 + 0.1 * span) + units);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('sliding window log: in any window at most the limit plus one block per holder', () => {
    const timers = new FakeTimers();
    const store = new TestStore();
    const clock = (): number => timers.now();
    const algorithm = slidingWindowLog({ limit: 30, window: '1s' });
    const instances = Array.from({ length: 3 }, () =>
      createLimiter({ algorithm, store, clock, timers, lease: { units: 5 } }),
    );
    const times: number[] = [];
    for (let t = 0; t < 5000; t += 7) {
      timers.advance(7);
      for (const l of instances) if (l.consumeSync('k').allowed) times.push(timers.now());
    }
    for (let i = 0; i < times.length; i++) {
      let j = i;
      while (j < times.length && times[j]! < times[i]! + 1000) j++;
      expect(j - i).toBeLessThanOrEqual(30 + 3 * 5);
    }
  });
});

describe('beside the rest of the limiter', () => {
  it('tells observers one decision per request and the units leased and returned', async () => {
    const { limiter } = setup();
    const leases: LeaseUnitsEvent[] = [];
    let decisions = 0;
    const l = limiter({
      name: 'api',
      observer: { decision: () => void decisions++, leaseUnits: (e) => void leases.push({ ...e }) },
    });
    for (let i = 0; i < 12; i++) l.consumeSync('k');
    await l.close();
    expect(decisions).toBe(12);
    expect(leases).toEqual([
      { limit: 'api', action: 'leased', units: 10 },
      { limit: 'api', action: 'leased', units: 10 },
      { limit: 'api', action: 'returned', units: 8 },
    ]);
  });

  it('a request admitted from a block and then denied by a later limit gets its units back into the block (no store call)', () => {
    const { limiter, store, clock, used } = setup();
    const leased = limiter({ prefix: 'a' });
    const strict = createLimiter({ algorithm: fixedWindow({ limit: 1, window: '1s' }), store, clock, prefix: 'b' });
    const group = combineLimiters([leased, strict]);
    expect(group.consumeSync('k').allowed).toBe(true);
    const calls = store.calls.length;
    expect(group.consumeSync('k').allowed).toBe(false);
    expect(store.calls.slice(calls).filter((c) => c.startsWith('giveBack'))).toEqual([]);
    // The block still holds the unit given back: 9 more requests of `a` need no store call for units.
    expect(used('a:k')).toBe(10);
  });

  it.each([
    ['past what the block has left: the block spent first, the store charged the rest', 15, 5],
    ['within what the block has left: spent from the block alone', 6, 14],
    ['below the estimate: given back into the block', 0, 20],
  ])('a settle above or below the estimate, %s: never more than the limit in all', async (_what, actual, after) => {
    const { store, clock, timers } = setup();
    const twenty = fixedWindow({ limit: 20, window: '1m' });
    const limiter = createLimiter({ algorithm: twenty, store, clock, timers, lease: { units: 10 } });
    const decision = await limiter.consume('k');
    await limiter.settle('k', 1, actual, decision);
    let admitted = 0;
    while ((await limiter.consume('k')).allowed && admitted < 40) admitted++;
    expect(admitted).toBe(after);
    expect(actual + admitted).toBe(20);
  });

  it('a per-request algorithm leases per configuration; one that cannot lease is charged alone', () => {
    const { store, clock, timers } = setup();
    const l = createLimiter({ store, clock, timers, lease: { units: 10 } });
    const plan = fixedWindow({ limit: 100, window: '1s' });
    l.consumeSync('k', 1, plan);
    l.consumeSync('k', 1, plan);
    expect(store.calls.filter((c) => c.startsWith('charge'))).toHaveLength(1);
    const counted = fixedWindow({ limit: 100, window: '1s', countDenied: true });
    l.consumeSync('j', 1, counted);
    l.consumeSync('j', 1, counted);
    expect(store.calls.filter((c) => c.startsWith('charge'))).toHaveLength(3);
  });
});
