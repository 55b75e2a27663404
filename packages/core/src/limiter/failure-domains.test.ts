/**
 * A store with failure domains (`Store.failureDomain`, as a Redis Cluster has nodes): the limiter keeps
 * a store-down circuit per domain, so the failures of one domain open only its circuit, the keys of
 * the other domains keep going to the store, and the probe of an open circuit is per domain. A store
 * without domains keeps its one circuit.
 *
 * Keys `a…` live in domain 'A', keys `b…` in domain 'B'.
 */
import { describe, expect, it } from 'vitest';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { StoreError } from '../errors.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { testStoreLimiter } from '../testing/test-store-limiter.js';

const bucket = () => tokenBucket({ capacity: 100, refillRate: 1, interval: '1h' });
const domainOf = (key: string): string => key[0]!.toUpperCase();
const inA = (key: string): boolean => key.startsWith('a');

describe('a remote store with failure domains', () => {
  it("one domain's failures open only its circuit; the other domain's keys keep going to the store", async () => {
    const timers = new FakeTimers();
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: 20, timers, storeRetryInterval: 100, storeFailureThreshold: 2 },
      store: { domainOf },
      start: 1_000,
    });
    // Domain A times out twice: its circuit opens.
    for (let i = 0; i < 2; i++) {
      const a = limiter.consume('a1');
      await timers.advanceAsync(20);
      expect((await a).reason).toBe('timeout');
    }
    store.pending.splice(0);
    const calls = store.calls.length;
    const decisions = limiter.consume('a2');
    const b = [limiter.consume('b1'), limiter.consume('b2'), limiter.peek('b1')];
    // Only B's calls went to the store: A's key was decided by the policy without a call.
    expect(store.calls.length).toBe(calls + 3);
    expect((await decisions).reason).toBe('timeout');
    store.answerAll();
    expect((await Promise.all(b)).map((d) => [d.allowed, d.reason])).toEqual([
      [true, undefined],
      [true, undefined],
      [true, undefined],
    ]);

    // A's retry time: one probe for domain A (the second call of A waits for it), B is untouched.
    clock.now += 100;
    const probe = limiter.consume('a3');
    const skipped = limiter.consume('a1');
    const bAgain = limiter.consume('b1');
    expect(store.calls.length).toBe(calls + 5);
    expect((await skipped).reason).toBe('timeout');
    expect((await store.answered(probe)).reason).toBeUndefined();
    expect((await bAgain).reason).toBeUndefined();
    // The probe closed A's circuit: A's keys go to the store again.
    const aBack = limiter.consume('a1');
    expect(store.calls.length).toBe(calls + 6);
    expect((await store.answered(aBack)).reason).toBeUndefined();
  });

  it('each domain has its own probe: a failed probe of A keeps A open and leaves B closed', async () => {
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeRetryInterval: 100, storeFailureThreshold: 1 },
      store: { domainOf },
    });
    const [a, b] = [limiter.consume('a1'), limiter.consume('b1')];
    store.failAll(); // both domains fail once: both circuits open
    expect([(await a).reason, (await b).reason]).toEqual(['store-error', 'store-error']);
    clock.now = 100;
    const probes = [limiter.consume('a1'), limiter.consume('b1'), limiter.consume('a2'), limiter.consume('b2')];
    // One probe per domain went to the store; the two others were decided by the policy.
    expect(store.pending.map((p) => p.key)).toEqual(['a1', 'b1']);
    store.failWhere(inA);
    expect((await Promise.all(probes)).map((d) => d.reason)).toEqual([
      'store-error',
      undefined,
      'store-error',
      'store-error',
    ]);
    const after = [limiter.consume('a1'), limiter.consume('b1')];
    expect(store.pending.map((p) => p.key)).toEqual(['b1']);
    store.answerAll();
    expect((await Promise.all(after)).map((d) => d.reason)).toEqual(['store-error', undefined]);
  });

  it('a store without failure domains keeps one circuit: a failure of any key opens it for all', async () => {
    const { store, limiter } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeFailureThreshold: 1 },
    });
    const a = limiter.consume('a1');
    store.failAll();
    expect((await a).reason).toBe('store-error');
    expect((await limiter.consume('b1')).reason).toBe('store-error');
    expect(store.pending).toHaveLength(0);
  });
});

describe('a local store with failure domains', () => {
  it("consumeSync gates by the key's domain: A's failures leave B's keys answered by the store", () => {
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), storeRetryInterval: 100, storeFailureThreshold: 2 },
      store: { answers: 'sync', domainOf },
    });
    store.failure = new StoreError('node down');
    store.failing = inA;
    expect([limiter.consumeSync('a1').reason, limiter.consumeSync('a2').reason]).toEqual([
      'store-error',
      'store-error',
    ]);
    store.calls.length = 0;
    expect([
      limiter.consumeSync('a1').reason,
      limiter.consumeSync('b1').reason,
      limiter.consumeSync('b2').reason,
    ]).toEqual(['store-error', undefined, undefined]);
    expect(store.calls).toEqual(['charge b1', 'charge b2']);
    // A recovers: its probe (after the retry interval) closes its circuit.
    store.failure = undefined;
    clock.now = 100;
    expect(limiter.consumeSync('a1').reason).toBeUndefined();
    expect(limiter.consumeSync('a2').reason).toBeUndefined();
    expect(store.calls).toEqual(['charge b1', 'charge b2', 'charge a1', 'charge a2']);
  });
});
