import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { concurrency } from '../algorithms/concurrency.js';
import type { Algorithm } from '../algorithm.js';
import { combineLimiters } from '../combine.js';
import { createLimiter } from '../limiter.js';
import type { Store } from '../store.js';
import { checkScenario, runScenario } from './run-scenario.js';
import { scenarios } from './scenarios.js';

export interface ConformanceOptions {
  /** Shown in the test names. */
  name: string;
  /** Creates the store once for the suite. */
  createStore: () => Store | Promise<Store>;
  /** Closes it after the suite (default: `store.close()`). */
  closeStore?: (store: Store) => unknown;
  /** Runs per property test (default 100; lower it for remote stores). */
  propertyRuns?: number;
}

let prefixCounter = 0;
/** A key namespace no other test (or earlier run against a shared server) uses. */
function freshPrefix(label: string): string {
  prefixCounter++;
  return `conf-${process.pid}-${Date.now().toString(36)}-${prefixCounter}-${label}`;
}

/**
 * The conformance suite every store runs (vitest). It registers a `describe` block with:
 * the scenario tables (the seed's two batches, costs, retry-after and reset values, window edges, the
 * clock going backwards, peek/reset/countDenied, configuration changes, concurrency leases), input
 * validation that must leave state untouched, isolation of keys, prefixes and algorithm kinds,
 * combined limits, atomicity under concurrent calls, and property tests of the algorithms' bounds.
 */
export function runStoreConformance(options: ConformanceOptions): void {
  const runs = options.propertyRuns ?? 100;

  describe(`${options.name}: rl store conformance`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await options.createStore();
    });
    afterAll(async () => {
      if (options.closeStore) await options.closeStore(store);
      else await store?.close?.();
    });

    describe('scenario tables', () => {
      for (const scenario of scenarios) {
        it(`${scenario.name}: ${scenario.description}`, async () => {
          const results = await runScenario(store, scenario, { prefix: freshPrefix('scenario') });
          expect(checkScenario(results)).toEqual([]);
        });
      }
    });

    describe("the seed's load test (seeds/001), scaled: 10 s at 50 requests/s, then 5 s at 600/s", () => {
      /**
       * The gateway test of the seed: a warm-up well under the limit, then three times the limit. Here
       * one key, 50/s for 10 s (a request every 20 ms), then 6 requests every 10 ms for 5 s, on the fake
       * clock. Returns how many were admitted in the warm-up and in each second of the surge, and the
       * longest delay a shaper gave.
       */
      async function surge(algorithm: Algorithm): Promise<{ warm: number; perSecond: number[]; maxDelay: number }> {
        let now = 0;
        const limiter = createLimiter({ algorithm, store, clock: () => now, prefix: freshPrefix('surge'), timeout: false, denyCache: false });
        let warm = 0;
        for (let i = 0; i < 500; i++) {
          now = i * 20;
          if ((await limiter.consume('gateway')).allowed) warm++;
        }
        const perSecond = [0, 0, 0, 0, 0];
        let maxDelay = 0;
        for (let batch = 0; batch < 500; batch++) {
          now = 10_000 + batch * 10;
          for (let j = 0; j < 6; j++) {
            const d = await limiter.consume('gateway');
            if (!d.allowed) continue;
            perSecond[Math.floor(batch / 100)]!++;
            maxDelay = Math.max(maxDelay, d.delayMs);
          }
        }
        return { warm, perSecond, maxDelay };
      }

      it('token bucket, 200/s with a burst of 400: the full bucket, then exactly the rate', async () => {
        // First second: the 400 saved during the warm-up plus 2 tokens per 10 ms for 99 intervals.
        expect(await surge(tokenBucket({ capacity: 400, refillRate: 200 }))).toEqual({ warm: 500, perSecond: [598, 200, 200, 200, 200], maxDelay: 0 });
      });

      it('fixed window, 200 per 1s: 200 in each window, whatever came before', async () => {
        expect(await surge(fixedWindow({ limit: 200, window: '1s' }))).toEqual({ warm: 500, perSecond: [200, 200, 200, 200, 200], maxDelay: 0 });
      });

      it('sliding window log, 200 per 1s: never more than 200 in any second', async () => {
        expect(await surge(slidingWindowLog({ limit: 200, window: '1s' }))).toEqual({ warm: 500, perSecond: [200, 200, 200, 200, 200], maxDelay: 0 });
      });

      it("shaping leaky bucket, 200/s with a queue of 100: the seed's 500 ms queue, answered at once", async () => {
        // The seed's gateway queued for up to 500 ms and then answered 429; the shaper admits what its
        // queue can hold with a delay under 500 ms and denies the rest at once.
        expect(await surge(leakyBucket({ capacity: 100, leakRate: 200, mode: 'shape' }))).toEqual({ warm: 500, perSecond: [298, 200, 200, 200, 200], maxDelay: 495 });
      });
    });

    describe('bad input changes no state', () => {
      const algorithms: Algorithm[] = [
        fixedWindow({ limit: 10, window: '1s' }),
        slidingWindowLog({ limit: 10, window: '1s' }),
        slidingWindowCounter({ limit: 10, window: '1s' }),
        tokenBucket({ capacity: 10, refillRate: 1 }),
        leakyBucket({ capacity: 10, leakRate: 1 }),
        leakyBucket({ capacity: 10, leakRate: 1, mode: 'shape' }),
      ];
      for (const algorithm of algorithms) {
        it(`${algorithm.kind}${algorithm.options.mode ? ` (${String(algorithm.options.mode)})` : ''}: rejects NaN, ±Infinity, 0, negative, non-number and over-capacity costs`, async () => {
          const limiter = createLimiter({ algorithm, store, clock: () => 5_000, prefix: freshPrefix('cost'), timeout: false });
          await limiter.consume('k', 3);
          const before = await limiter.peek('k');
          for (const cost of [Number.NaN, Infinity, -Infinity, 0, -1, '2' as unknown as number, null as unknown as number]) {
            await expect(limiter.consume('k', cost)).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
          }
          await expect(limiter.consume('k', 11)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
          await expect(limiter.peek('k', -1)).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
          for (const key of ['', undefined as unknown as string, 42 as unknown as string]) {
            await expect(limiter.consume(key)).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
          }
          expect(await limiter.peek('k')).toEqual(before);
          expect(before.remaining).toBe(7);
        });
      }
    });

    describe('isolation', () => {
      it('keys, prefixes and algorithm kinds never share state', async () => {
        const prefix = freshPrefix('iso');
        const clock = () => 0;
        const a = createLimiter({ algorithm: fixedWindow({ limit: 2, window: '1m' }), store, clock, prefix, timeout: false });
        const b = createLimiter({ algorithm: fixedWindow({ limit: 2, window: '1m' }), store, clock, prefix: `${prefix}-other`, timeout: false });
        const c = createLimiter({ algorithm: tokenBucket({ capacity: 2, refillRate: 1, interval: '1m' }), store, clock, prefix, timeout: false });
        await a.consume('user', 2);
        expect((await a.consume('user')).allowed).toBe(false);
        expect((await a.consume('user2')).allowed).toBe(true);
        expect((await b.consume('user', 2)).allowed).toBe(true);
        expect((await c.consume('user', 2)).allowed).toBe(true);
      });

      it('keys with braces, colons, unicode, binary-like and very long strings are distinct and safe', async () => {
        const limiter = createLimiter({ algorithm: fixedWindow({ limit: 1, window: '1m' }), store, clock: () => 0, prefix: freshPrefix('keys'), timeout: false });
        const keys = ['{', '}', '{}', '}{', 'a{b}c', '{a}', 'x:y:z', 'ключ-🔑', '\u0000\u0001\uffff', 'k'.repeat(10_000), ' '];
        for (const key of keys) expect((await limiter.consume(key)).allowed, JSON.stringify(key.slice(0, 20))).toBe(true);
        for (const key of keys) expect((await limiter.consume(key)).allowed, JSON.stringify(key.slice(0, 20))).toBe(false);
      });
    });

    describe('combined limits', () => {
      /** A tenant's token bucket (3 per hour) and a user limit, combined in that order, at a fixed time. */
      const tenantAndUser = (label: string, userAlgorithm: Algorithm) => {
        const prefix = freshPrefix(label);
        const clock = () => 1_000;
        const tenant = createLimiter({ algorithm: tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' }), store, clock, prefix: `${prefix}-tenant`, timeout: false });
        const user = createLimiter({ algorithm: userAlgorithm, store, clock, prefix: `${prefix}-user`, timeout: false });
        return { tenant, user, group: combineLimiters([tenant, user]) };
      };

      it('admits only if all admit; a denial by one uses no quota in the others', async () => {
        const { tenant, user, group } = tenantAndUser('combo', slidingWindowLog({ limit: 2, window: '1h' }));
        expect((await group.consume(['acme', 'alice'])).allowed).toBe(true);
        expect((await group.consume(['acme', 'alice'])).allowed).toBe(true);
        const denied = await group.consume(['acme', 'alice']);
        expect(denied.allowed).toBe(false);
        expect(denied.deniedBy).toBe(1);
        // The tenant's token taken by the denied request was given back: bob gets the last one.
        expect((await tenant.peek('acme')).remaining).toBe(1);
        const bob = await group.consume(['acme', 'bob']);
        expect(bob.allowed).toBe(true);
        expect(bob.remaining).toBe(0);
        const carol = await group.consume(['acme', 'carol']);
        expect(carol).toMatchObject({ allowed: false, deniedBy: 0 });
        // The user limit was not asked, so carol has her full quota.
        expect((await user.peek('carol')).remaining).toBe(2);
      });

      it('a bad key or cost for any limit rejects before any limit is charged', async () => {
        const { tenant, user, group } = tenantAndUser('combo-bad', fixedWindow({ limit: 2, window: '1h' }));
        await expect(group.consume(['acme', 'alice'], [1, 5])).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
        await expect(group.consume(['acme', 'alice'], [1, -1])).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
        await expect(group.consume(['acme', ''])).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
        await expect(group.consume(['acme'] as never)).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
        expect((await tenant.peek('acme')).remaining).toBe(3);
        expect((await user.peek('alice')).remaining).toBe(2);
      });
    });

    describe('atomicity', () => {
      const algorithms: Algorithm[] = [
        fixedWindow({ limit: 25, window: '1h' }),
        slidingWindowLog({ limit: 25, window: '1h' }),
        slidingWindowCounter({ limit: 25, window: '1h' }),
        tokenBucket({ capacity: 25, refillRate: 1, interval: '1h' }),
        leakyBucket({ capacity: 25, leakRate: 1, interval: '1h' }),
      ];
      for (const algorithm of algorithms) {
        it(`${algorithm.kind}: 200 concurrent calls on one key admit exactly the limit`, async () => {
          const limiter = createLimiter({ algorithm, store, clock: () => 1_000, prefix: freshPrefix('atomic'), timeout: false });
          const decisions = await Promise.all(Array.from({ length: 200 }, () => limiter.consume('hot')));
          expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
        });
      }
      it('concurrency: 100 concurrent acquires admit exactly the limit; releases free them', async () => {
        const limiter = createLimiter({ algorithm: concurrency({ limit: 7, lease: '1m' }), store, clock: () => 1_000, prefix: freshPrefix('cc'), timeout: false });
        const leases = await Promise.all(Array.from({ length: 100 }, () => limiter.acquire('hot')));
        const held = leases.filter((l) => l.allowed);
        expect(held).toHaveLength(7);
        await Promise.all(held.map((l) => l.release()));
        await Promise.all(held.map((l) => l.release()));
        const again = await Promise.all(Array.from({ length: 10 }, () => limiter.acquire('hot')));
        expect(again.filter((l) => l.allowed)).toHaveLength(7);
      });
    });

    describe('store operations', () => {
      it('acquiring a live lease id again renews it and takes no second permit', async () => {
        const algorithm = concurrency({ limit: 2, lease: '1s' });
        const key = `${freshPrefix('renew')}:k`;
        expect(await store.acquire(key, algorithm, 'lease-a', 1_000)).toMatchObject({ allowed: true, remaining: 1 });
        expect(await store.acquire(key, algorithm, 'lease-a', 1_500)).toMatchObject({ allowed: true, remaining: 1, resetMs: 1000 });
        expect(await store.acquire(key, algorithm, 'lease-b', 1_600)).toMatchObject({ allowed: true, remaining: 0 });
        expect(await store.acquire(key, algorithm, 'lease-a', 1_700)).toMatchObject({ allowed: true, remaining: 0 });
        expect(await store.acquire(key, algorithm, 'lease-c', 1_700)).toMatchObject({ allowed: false, retryAfterMs: 900 });
        await store.release(key, algorithm, 'lease-a');
        await store.release(key, algorithm, 'lease-b');
      });

      it('a flood of counted denials keeps a sliding log bounded and blocking until the flood has left the window', async () => {
        let now = 0;
        const limiter = createLimiter({
          algorithm: slidingWindowLog({ limit: 2, window: '1s', countDenied: true }),
          store,
          clock: () => now,
          prefix: freshPrefix('flood'),
          timeout: false,
        });
        for (now = 0; now < 400; now++) await limiter.consume('k');
        now = 1_398;
        expect((await limiter.peek('k', 1)).allowed).toBe(false);
        now = 1_399;
        expect(await limiter.peek('k', 1)).toMatchObject({ allowed: true, remaining: 1 });
      });
    });

    describe("the store's own clock", () => {
      it('decides without an explicit clock', async () => {
        const limiter = createLimiter({ algorithm: fixedWindow({ limit: 2, window: '1h' }), store, prefix: freshPrefix('own-clock'), timeout: false });
        const first = await limiter.consume('k');
        expect(first).toMatchObject({ allowed: true, remaining: 1 });
        expect(first.resetMs).toBeGreaterThan(0);
        expect(first.resetMs).toBeLessThanOrEqual(3_600_000);
        await limiter.consume('k');
        expect((await limiter.consume('k')).allowed).toBe(false);
      });
    });

    describe('properties', () => {
      /** Arrival gaps (ms) and costs of a random request sequence. */
      const arrivals = (maxCost: number) =>
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 400 }), cost: fc.integer({ min: 1, max: maxCost }) }), { minLength: 1, maxLength: 60 });

      async function admittedTimes(algorithm: Algorithm, sequence: { gap: number; cost: number }[]): Promise<{ t: number; cost: number }[]> {
        let now = 10_000;
        const limiter = createLimiter({ algorithm, store, clock: () => now, prefix: freshPrefix('prop'), timeout: false });
        const admitted: { t: number; cost: number }[] = [];
        for (const { gap, cost } of sequence) {
          now += gap;
          const d = await limiter.consume('k', cost);
          if (d.allowed) admitted.push({ t: now, cost });
        }
        return admitted;
      }

      it('a token bucket never admits more than capacity + rate × T in any span T', async () => {
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 20 }), arrivals(3), async (capacity, perSecond, sequence) => {
            fc.pre(sequence.every((s) => s.cost <= capacity));
            const admitted = await admittedTimes(tokenBucket({ capacity, refillRate: perSecond }), sequence);
            for (let i = 0; i < admitted.length; i++) {
              let sum = 0;
              for (let j = i; j < admitted.length; j++) {
                sum += admitted[j]!.cost;
                const span = admitted[j]!.t - admitted[i]!.t;
                expect(sum).toBeLessThanOrEqual(capacity + (perSecond * span) / 1000 + 1e-6);
              }
            }
          }),
          { numRuns: runs },
        );
      });

      it('a leaky bucket meter never admits more than capacity + rate × T in any span T', async () => {
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 20 }), arrivals(3), async (capacity, perSecond, sequence) => {
            fc.pre(sequence.every((s) => s.cost <= capacity));
            const admitted = await admittedTimes(leakyBucket({ capacity, leakRate: perSecond }), sequence);
            for (let i = 0; i < admitted.length; i++) {
              let sum = 0;
              for (let j = i; j < admitted.length; j++) {
                sum += admitted[j]!.cost;
                expect(sum).toBeLessThanOrEqual(capacity + (perSecond * (admitted[j]!.t - admitted[i]!.t)) / 1000 + 1e-6);
              }
            }
          }),
          { numRuns: runs },
        );
      });

      it('a sliding log never admits more than the limit in any window', async () => {
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 100, max: 3000 }), arrivals(3), async (limit, windowMs, sequence) => {
            fc.pre(sequence.every((s) => s.cost <= limit));
            const admitted = await admittedTimes(slidingWindowLog({ limit, window: windowMs }), sequence);
            for (let i = 0; i < admitted.length; i++) {
              // The window (t_i - window, t_i] ending at each admission.
              const sum = admitted.filter((a) => a.t > admitted[i]!.t - windowMs && a.t <= admitted[i]!.t).reduce((s, a) => s + a.cost, 0);
              expect(sum).toBeLessThanOrEqual(limit);
            }
          }),
          { numRuns: runs },
        );
      });

      it('a fixed window never admits more than the limit in one aligned window', async () => {
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 100, max: 3000 }), arrivals(3), async (limit, windowMs, sequence) => {
            fc.pre(sequence.every((s) => s.cost <= limit));
            const admitted = await admittedTimes(fixedWindow({ limit, window: windowMs }), sequence);
            const perWindow = new Map<number, number>();
            for (const a of admitted) {
              const w = Math.floor(a.t / windowMs);
              perWindow.set(w, (perWindow.get(w) ?? 0) + a.cost);
            }
            for (const sum of perWindow.values()) expect(sum).toBeLessThanOrEqual(limit);
          }),
          { numRuns: runs },
        );
      });

      it('remaining is a whole number never below 0, and a denial always says when to retry', async () => {
        const make = [
          (n: number) => fixedWindow({ limit: n, window: '1s' }),
          (n: number) => slidingWindowLog({ limit: n, window: '1s' }),
          (n: number) => slidingWindowCounter({ limit: n, window: '1s' }),
          (n: number) => tokenBucket({ capacity: n, refillRate: 3 }),
          (n: number) => leakyBucket({ capacity: n, leakRate: 3, mode: 'shape' }),
        ];
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 0, max: make.length - 1 }), fc.integer({ min: 1, max: 6 }), arrivals(2), async (which, limit, sequence) => {
            fc.pre(sequence.every((s) => s.cost <= limit));
            let now = 10_000;
            const limiter = createLimiter({ algorithm: make[which]!(limit), store, clock: () => now, prefix: freshPrefix('fields'), timeout: false });
            for (const { gap, cost } of sequence) {
              now += gap;
              const d = await limiter.consume('k', cost);
              expect(Number.isInteger(d.remaining) && d.remaining >= 0 && d.remaining <= limit).toBe(true);
              // The RateLimit header's remaining never exceeds its policy's quota (a bucket's burst included).
              expect(d.remaining).toBeLessThanOrEqual(d.policy.quota);
              expect(Number.isInteger(d.resetMs) && d.resetMs >= 0).toBe(true);
              expect(Number.isInteger(d.delayMs) && d.delayMs >= 0).toBe(true);
              if (d.allowed) expect(d.retryAfterMs).toBe(0);
              else expect(d.retryAfterMs).toBeGreaterThanOrEqual(1);
            }
          }),
          { numRuns: runs },
        );
      });

      it('a denial a fraction of a microsecond before the window ends still says to retry in at least 1 ms', async () => {
        let now = 999.9999999999;
        const limiter = createLimiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store, clock: () => now, prefix: freshPrefix('edge'), timeout: false, denyCache: false });
        expect((await limiter.consume('k')).allowed).toBe(true);
        const denied = await limiter.consume('k');
        expect(denied.allowed).toBe(false);
        expect(denied.retryAfterMs).toBe(1);
        now = 1000;
        expect((await limiter.consume('k')).allowed).toBe(true);
      });
    });
  });
}
