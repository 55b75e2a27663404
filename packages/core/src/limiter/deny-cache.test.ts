/** The deny cache alone, then the limiter's use of it with a remote store answered by hand. */
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { withBlock } from '../algorithms/block.js';
import { makeDecision, makePolicy } from '../decision.js';
import type { Charge } from '../store/interface.js';
import { TestStore, type TestStoreAnswers } from '../testing/test-store.js';
import { DenyCache, parseDenyCache } from './deny-cache.js';
import { createLimiter } from './limiter.js';

const policy = makePolicy(5, 1000);
const algorithm = fixedWindow({ limit: 5, window: '1s' });
const denial = (retryAfterMs: number, resetMs = retryAfterMs) =>
  makeDecision({ allowed: false, limit: 5, remaining: 0, resetMs, retryAfterMs, delayMs: 0, policy, at: 0 });
const admitted = () =>
  makeDecision({ allowed: true, limit: 5, remaining: 4, resetMs: 1000, retryAfterMs: 0, delayMs: 0, policy, at: 0 });
const charge = (key: string, cost: number): Charge => ({ key, algorithm, cost });

describe('DenyCache', () => {
  it('answers for the key at the cached cost or more until the retry time, counting it down', () => {
    const cache = new DenyCache();
    cache.remember(charge('k', 2), denial(1000, 1500), 10_000);
    expect(cache.get(charge('k', 1), 10_000)).toBeUndefined(); // a smaller request may pass
    expect(cache.get(charge('other', 2), 10_000)).toBeUndefined();
    expect(cache.get(charge('k', 3), 10_400)).toMatchObject({
      allowed: false,
      reason: 'deny-cache',
      retryAfterMs: 600,
      resetMs: 1100,
      remaining: 0,
    });
    expect(cache.get(charge('k', 2), 11_000)).toBeUndefined(); // expired, and dropped
  });

  it('a clock stepped back before a denial was asked finds none (the store decides on its own clock), and forgets it', () => {
    const cache = new DenyCache();
    cache.remember(charge('k', 1), denial(2_000), 3_600_000);
    expect(cache.get(charge('k', 1), 3_600_500)).toMatchObject({ reason: 'deny-cache', retryAfterMs: 1_500 });
    // An hour back: the store is asked, not told to wait an hour.
    expect(cache.get(charge('k', 1), 1_000)).toBeUndefined();
    expect(cache.get(charge('k', 1), 3_600_500)).toBeUndefined();
  });

  it('holds a long key by its digest: a flood of 16 kB keys keeps entries of a bounded size, each still its own', () => {
    const cache = new DenyCache(100);
    const long = (i: number) => `api:${String(i).padStart(6, '0')}${'x'.repeat(16_000)}`;
    for (let i = 0; i < 100; i++) cache.remember(charge(long(i), 1), denial(1000), 0);
    const held = [...(cache as unknown as { entries: Map<string, unknown> }).entries.keys()];
    expect(held).toHaveLength(100);
    expect(Math.max(...held.map((key) => key.length))).toBe(44);
    expect(cache.get(charge(long(7), 1), 10)).toMatchObject({ reason: 'deny-cache' });
    expect(cache.get(charge(long(7).slice(0, -1), 1), 10)).toBeUndefined();
    cache.delete(long(7)); // a reset notice names the key itself
    expect(cache.get(charge(long(7), 1), 10)).toBeUndefined();
    expect(cache.get(charge(long(8), 1), 10)).toMatchObject({ reason: 'deny-cache' });
  });

  it('keeps only the store’s own denials with a retry time', () => {
    const cache = new DenyCache();
    cache.remember(charge('admitted', 1), admitted(), 0);
    cache.remember(charge('no-retry', 1), denial(0), 0);
    const fromPolicy = { ...denial(1000), reason: 'timeout' as const };
    cache.remember(charge('policy', 1), fromPolicy, 0);
    for (const key of ['admitted', 'no-retry', 'policy']) expect(cache.get(charge(key, 1), 0)).toBeUndefined();
  });

  it('keeps a denial decided under an override (its policy is not the algorithm’s) at most a second, answering the store’s retry counted down: the override ends at its ttl, unheard', () => {
    const cache = new DenyCache();
    const underOverride = makeDecision({
      allowed: false,
      limit: 1,
      remaining: 0,
      resetMs: 3_600_000,
      retryAfterMs: 3_600_000,
      delayMs: 0,
      policy: makePolicy(1, 3_600_000),
      at: 0,
    });
    cache.remember(charge('k', 1), underOverride, 0);
    expect(cache.get(charge('k', 1), 999)).toMatchObject({ reason: 'deny-cache', retryAfterMs: 3_599_001 });
    // A larger cost may be retried sooner (a cost above the override's limit: at its end): the store answers it.
    expect(cache.get(charge('k', 2), 999)).toBeUndefined();
    expect(cache.get(charge('k', 1), 1_000)).toBeUndefined();
  });

  it('keeps the denial of an answer only when no reset was heard since its charge was sent, and never an idempotent charge’s', () => {
    const listeners: ((storageKey: string | undefined) => void)[] = [];
    const store = Object.assign(new TestStore({ answers: 'async' }), {
      watchResets: (listener: (storageKey: string | undefined) => void) => void listeners.push(listener),
    });
    const cache = new DenyCache();
    cache.followResets(store);
    const denied = { decision: denial(1000), took: 'charged' as const };
    const sent = cache.generation;
    cache.answered(charge('kept', 1), denied, 0, sent);
    // The first denial kept subscribed the cache; a reset heard now makes every answer sent before it stale.
    listeners[0]!('other');
    cache.answered(charge('stale', 1), denied, 0, sent);
    const idempotent: Charge = {
      ...charge('idempotent', 1),
      idempotency: { id: 'a', fingerprint: 'f', ttlMs: 1000, maxIds: 10, maxReplays: 10 },
    };
    cache.answered(idempotent, denied, 0, cache.generation);
    const admitted = { decision: { ...denial(1000), allowed: true }, took: 'charged' as const };
    cache.answered(charge('admitted', 1), admitted, 0, cache.generation);
    const cached = ['kept', 'stale', 'idempotent', 'admitted'].map((key) => cache.get(charge(key, 1), 0) !== undefined);
    expect(cached).toEqual([true, false, false, false]);
  });

  it("a block's denial (a ban's, a lockout's) holds until the block ends for a consume and a reservation alike, whatever their maxDelay", () => {
    const banned = (retryAfterMs: number) => ({ ...denial(retryAfterMs), reason: 'blocked' as const });
    const locking = withBlock(algorithm, 30_000);
    const asked = (key: string, maxDelayMs?: number, a = algorithm): Charge => ({
      key,
      algorithm: a,
      cost: 1,
      maxDelayMs,
    });
    const cache = new DenyCache();
    // [what is remembered, asked at 0] then [what asks at 1 000 ms, the retry it is told]
    const rows: [string, Charge, ReturnType<typeof denial>, Charge, number][] = [
      ["a consume's ban of 8 s, then a reservation of 2 s", asked('a'), banned(8_000), asked('a', 2_000), 7_000],
      [
        "a reservation's ban of 3 s (maxDelay 2 s), then a reservation of 0",
        asked('b', 2_000),
        banned(3_000),
        asked('b', 0),
        2_000,
      ],
      ["a reservation's ban of 3 s, then a consume", asked('c', 2_000), banned(3_000), asked('c'), 2_000],
      [
        "a lockout's first denial (30 s), then a reservation of 10 s",
        asked('d', undefined, locking),
        denial(30_000),
        asked('d', 10_000, locking),
        29_000,
      ],
    ];
    for (const [what, first, decision, later, retry] of rows) {
      cache.remember(first, decision, 0);
      expect(cache.get(later, 1_000), what).toMatchObject({
        allowed: false,
        reason: 'deny-cache',
        retryAfterMs: retry,
      });
    }
  });

  it('drops the oldest entry when full', () => {
    const cache = new DenyCache(2);
    for (const key of ['a', 'b', 'c']) cache.remember(charge(key, 1), denial(1000), 0);
    expect(['a', 'b', 'c'].map((key) => cache.get(charge(key, 1), 0) !== undefined)).toEqual([false, true, true]);
  });

  it('is on by default for remote stores only, never for countDenied or concurrency limits', () => {
    const bucket = tokenBucket({ capacity: 2, refillRate: 1 });
    expect(parseDenyCache(undefined, bucket, false)).toBeInstanceOf(DenyCache);
    expect(parseDenyCache(undefined, bucket, true)).toBeUndefined();
    expect(parseDenyCache(true, bucket, true)).toBeInstanceOf(DenyCache);
    expect(parseDenyCache({ maxKeys: 5 }, bucket, true)).toBeInstanceOf(DenyCache);
    expect(parseDenyCache(false, bucket, false)).toBeUndefined();
    expect(parseDenyCache(true, fixedWindow({ limit: 2, window: '1m', countDenied: true }), false)).toBeUndefined();
    expect(() => parseDenyCache('yes', bucket, false)).toThrow(
      expect.objectContaining({ field: 'createLimiter.denyCache' }),
    );
    expect(() => parseDenyCache({ maxKeys: 0 }, bucket, false)).toThrow(
      expect.objectContaining({ field: 'createLimiter.denyCache.maxKeys' }),
    );
  });
});

/** What a store calls with each reset it hears of (`undefined`: any key), and `hearing: false` when it may miss some. */
type ResetListener = (storageKey: string | undefined, hearing?: boolean) => void;

/**
 * A limiter of one request an hour (prefix `p`) on a store that answers as `answers` says and hands
 * the listeners its deny cache asks for (`watchResets`) to the test, in order.
 */
function listeningLimiter(answers: TestStoreAnswers) {
  const listeners: ResetListener[] = [];
  const store = Object.assign(new TestStore({ answers }), {
    watchResets: (listener: ResetListener) => void listeners.push(listener),
  });
  const limiter = createLimiter({
    algorithm: fixedWindow({ limit: 1, window: '1h' }),
    store,
    clock: () => 0,
    timeout: false,
    prefix: 'p',
  });
  return { store, limiter, listeners };
}

describe('the limiter with a deny cache', () => {
  it('the deny cache holds a denial from the time the request was sent, for retryAfterMs', async () => {
    const store = new TestStore({ answers: 'manual' });
    let now = 10_000;
    const limiter = createLimiter({
      algorithm: tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' }),
      store,
      clock: () => now,
      timeout: false,
    });
    for (let i = 0; i < 2; i++) {
      const d = limiter.consume('k');
      store.answerAll();
      expect((await d).allowed).toBe(true);
    }
    const denied = limiter.consume('k');
    now += 400; // the answer takes 400 ms to arrive
    store.answerAll();
    const decision = await denied;
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 });
    // Cached until sent + retryAfterMs, not until answered + retryAfterMs.
    const cached = await limiter.consume('k');
    expect(cached).toMatchObject({ allowed: false, reason: 'deny-cache', retryAfterMs: 3_600_000 - 400 });
    now = 10_000 + 3_600_000;
    const calls = store.calls.length;
    const fresh = limiter.consume('k');
    expect(store.calls.length).toBe(calls + 1);
    store.answerAll();
    expect((await fresh).allowed).toBe(true);
  });

  it('reset forgets the cached denial', async () => {
    const store = new TestStore({ answers: 'manual' });
    const limiter = createLimiter({
      algorithm: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }),
      store,
      clock: () => 0,
      timeout: false,
    });
    for (const expected of [true, false]) {
      const d = limiter.consume('k');
      store.answerAll();
      expect((await d).allowed).toBe(expected);
    }
    expect((await limiter.consume('k')).reason).toBe('deny-cache');
    await limiter.reset('k');
    const after = limiter.consume('k');
    store.answerAll();
    expect(await after).toMatchObject({ allowed: true });
  });

  it('answers a flood of one exhausted key from the cache when the quota is built per request: configurations compare, not objects (issue 25)', async () => {
    const store = new TestStore({ answers: 'async' });
    const limiter = createLimiter({ store, clock: () => 0, timeout: false });
    // A quota read per request: a new object each time, with the customer's numbers.
    const quota = () => fixedWindow({ limit: 1, window: '1h' });
    expect((await limiter.consume('k', 1, quota())).allowed).toBe(true);
    expect((await limiter.consume('k', 1, quota())).allowed).toBe(false);
    const calls = store.calls.length;
    for (let i = 0; i < 100; i++) expect((await limiter.consume('k', 1, quota())).reason).toBe('deny-cache');
    expect(store.calls.length).toBe(calls);
    // Another configuration (the customer's plan changed) asks the store.
    expect((await limiter.consume('k', 1, fixedWindow({ limit: 5, window: '1h' }))).reason).toBeUndefined();
    expect(store.calls.length).toBe(calls + 1);
  });

  it("listens to the store's resets from its first cached denial: a reset elsewhere forgets the key, a possible miss forgets every key", async () => {
    const { limiter, listeners } = listeningLimiter('async');
    const deniedFromCache = async (key: string) => (await limiter.consume(key)).reason === 'deny-cache';
    for (const key of ['a', 'b']) await limiter.consume(key);
    expect(listeners).toHaveLength(0); // nothing cached yet: no subscription
    for (const key of ['a', 'b']) await limiter.consume(key);
    expect(listeners).toHaveLength(1); // once, at the first cached denial
    expect([await deniedFromCache('a'), await deniedFromCache('b')]).toEqual([true, true]);
    listeners[0]!('p:a');
    expect([await deniedFromCache('a'), await deniedFromCache('b')]).toEqual([false, true]);
    await deniedFromCache('a'); // cached again
    listeners[0]!(undefined);
    expect([await deniedFromCache('a'), await deniedFromCache('b')]).toEqual([false, false]);
  });

  it('answers and remembers nothing while the store says it cannot hear resets (hearing: false), until it hears again', async () => {
    const { store, limiter, listeners } = listeningLimiter('async');
    const reason = async (key: string) => (await limiter.consume(key)).reason;
    await limiter.consume('a');
    await limiter.consume('a'); // the first cached denial: the cache starts listening
    expect(await reason('a')).toBe('deny-cache');
    // The subscription broke: everything is forgotten, and no denial is cached however often it is denied.
    listeners[0]!(undefined, false);
    const calls = store.calls.length;
    expect([await reason('a'), await reason('a'), await reason('a')]).toEqual([undefined, undefined, undefined]);
    expect(store.calls.length).toBe(calls + 3);
    // Live again: the next denial is cached.
    listeners[0]!(undefined);
    expect([await reason('a'), await reason('a')]).toEqual([undefined, 'deny-cache']);
  });

  it('does not remember a denial whose request was sent before a reset was heard (its answer may be of the state before it)', async () => {
    const { store, limiter, listeners } = listeningLimiter('manual');
    const consume = async (key: string) => {
      const decision = limiter.consume(key);
      store.answerAll();
      return decision;
    };
    await consume('a');
    await consume('a'); // cached: listening
    listeners[0]!(undefined, true); // the subscription is live: forget (nothing to forget but that one)
    const inFlight = limiter.consume('a'); // sent, denied by the store before the reset…
    listeners[0]!('p:a'); // …whose notice is read first
    store.answerAll();
    expect((await inFlight).reason).toBeUndefined();
    const after = limiter.consume('a');
    expect(store.calls.length).toBe(4); // that denial was not remembered: the next request asks the store
    store.answerAll();
    await after;
  });
});
