/** The failure policy: deny, allow, or a fallback limiter reached through its public entry points; a fallback that cannot hold the main limiter's costs is rejected at creation. */
import { describe, expect, it } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { StoreError } from '../errors.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';
import type { LimiterOptions } from './options.js';

const failingLocal = () => {
  const store = new TestStore();
  store.failure = new StoreError('disk on fire');
  return store;
};
const small = () => tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' });

describe('deny and allow', () => {
  it("'deny' answers no units left, retry after storeRetryInterval; 'allow' the limit less the cost", () => {
    const algorithm = tokenBucket({ capacity: 10, refillRate: 1 });
    const deny = createLimiter({ algorithm, store: failingLocal(), storeRetryInterval: 250 });
    expect(deny.consumeSync('k', 3)).toMatchObject({
      allowed: false,
      remaining: 0,
      retryAfterMs: 250,
      limit: 10,
      reason: 'store-error',
    });
    const allow = createLimiter({ algorithm, store: failingLocal(), onStoreError: 'allow' });
    expect(allow.consumeSync('k', 3)).toMatchObject({
      allowed: true,
      remaining: 7,
      retryAfterMs: 0,
      limit: 10,
      reason: 'store-error',
    });
  });

  it('rejects anything else, null included (only undefined means the default)', () => {
    const make = (onStoreError: unknown) => () =>
      createLimiter({ algorithm: small(), store: new TestStore(), onStoreError: onStoreError as 'deny' });
    for (const bad of ['open', { fallback: undefined, extra: 1 }, 42, null]) {
      expect(make(bad)).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.onStoreError' }),
      );
    }
  });
});

describe('a fallback limiter', () => {
  it('a local fallback keeps it synchronous when the local store fails', () => {
    const limiter = createLimiter({
      algorithm: tokenBucket({ capacity: 3, refillRate: 1 }),
      store: failingLocal(),
      maxCost: 1,
      onStoreError: { fallback: { algorithm: small(), store: new TestStore() } },
    });
    expect(limiter.consumeSync('k')).toMatchObject({ allowed: true, reason: 'fallback' });
    expect(limiter.consumeSync('k')).toMatchObject({ allowed: false, reason: 'fallback' });
  });

  it('is asked with the user key through its own prefix (its own store state, never the main one’s)', async () => {
    const fallbackStore = new TestStore();
    const fallback = createLimiter({ algorithm: small(), store: fallbackStore, prefix: 'local' });
    const limiter = createLimiter({
      algorithm: small(),
      store: failingLocal(),
      prefix: 'shared',
      onStoreError: { fallback },
    });
    expect(await limiter.consume('alice')).toMatchObject({ allowed: true, reason: 'fallback' });
    expect(await limiter.peek('alice', 1)).toMatchObject({ allowed: false, reason: 'fallback' });
    expect(fallbackStore.calls).toEqual(['charge local:alice', 'peek local:alice']);
  });

  it('a fallback that cannot take the largest cost of the main limiter is rejected at creation, with what to do', () => {
    const create = (extra: object) => () =>
      createLimiter({
        algorithm: tokenBucket({ capacity: 3, refillRate: 1 }),
        store: new TestStore(),
        onStoreError: { fallback: { algorithm: small(), store: new TestStore() } },
        ...extra,
      });
    expect(create({})).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.onStoreError.fallback' }),
    );
    expect(create({})).toThrow(/capacity of at least 3.*maxCost/);
    expect(create({ maxCost: 2 })).toThrow(/capacity of at least 2/);
    expect(create({ maxCost: 1 })).not.toThrow();
    // A fallback limiter with a maxCost of its own below the main one's is rejected the same way.
    const capped = createLimiter({
      algorithm: tokenBucket({ capacity: 3, refillRate: 1 }),
      store: new TestStore(),
      maxCost: 1,
    });
    expect(() =>
      createLimiter({
        algorithm: tokenBucket({ capacity: 3, refillRate: 1 }),
        store: new TestStore(),
        onStoreError: { fallback: capped },
      }),
    ).toThrow(expect.objectContaining({ field: 'createLimiter.onStoreError.fallback' }));
  });

  it('a cost above maxCost is rejected, never clamped for the fallback', async () => {
    const limiter = createLimiter({
      algorithm: tokenBucket({ capacity: 3, refillRate: 1 }),
      store: failingLocal(),
      maxCost: 1,
      onStoreError: { fallback: { algorithm: small(), store: new TestStore() } },
    });
    expect(() => limiter.consumeSync('k', 2)).toThrow(expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }));
    await expect(limiter.consume('k', 2)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
  });

  it('a concurrency limit falls back to a concurrency limit only', () => {
    expect(() =>
      createLimiter({
        algorithm: concurrency({ limit: 2 }),
        store: new TestStore(),
        onStoreError: { fallback: { algorithm: small(), store: new TestStore() } },
      }),
    ).toThrow(expect.objectContaining({ field: 'createLimiter.onStoreError.fallback.algorithm' }));
  });

  it('permits taken from a fallback are released through the fallback', async () => {
    const store = new TestStore({ answers: 'manual' });
    const fallbackStore = new TestStore();
    const limiter = createLimiter({
      algorithm: concurrency({ limit: 5 }),
      store,
      timeout: false,
      storeFailureThreshold: 1,
      onStoreError: { fallback: { algorithm: concurrency({ limit: 1 }), store: fallbackStore, prefix: 'local' } },
    });
    const failing = limiter.acquire('k');
    store.failAll();
    const first = await failing;
    const second = await limiter.acquire('k'); // the circuit is open: straight to the fallback
    expect([first.allowed, first.reason, second.allowed, second.reason]).toEqual([true, 'fallback', false, 'fallback']);
    await first.release();
    await first.release(); // extra calls do nothing
    await second.release();
    expect(fallbackStore.calls).toEqual(['acquire local:k', 'acquire local:k', 'release local:k']);
    expect(fallbackStore.leasesOf('local:k')?.size).toBe(0);
  });
});

describe('a fallback’s own options', () => {
  const fallbackOf = (options: object): LimiterOptions => ({
    algorithm: small(),
    store: new TestStore(),
    onStoreError: { fallback: options as LimiterOptions },
  });
  const good = () => ({ algorithm: small(), store: new TestStore() });
  const F = 'createLimiter.onStoreError.fallback';

  it.each([
    ['an algorithm that is not one', { ...good(), algorithm: 'fixed' }, `${F}.algorithm`],
    ['a store that is not one', { ...good(), store: {} }, `${F}.store`],
    ['a negative timeout', { ...good(), timeout: -1 }, `${F}.timeout`],
    ['a clock that is not a function', { ...good(), clock: 0 }, `${F}.clock`],
    ['a bad denyCache', { ...good(), denyCache: 'yes' }, `${F}.denyCache`],
    ['an unknown option', { ...good(), extra: 1 }, `${F}.extra`],
    ['not an options object', 42, F],
    ['a bad onStoreError of its own', { ...good(), onStoreError: 'sometimes' }, `${F}.onStoreError`],
    [
      'a bad algorithm one level deeper',
      { ...good(), onStoreError: { fallback: { ...good(), algorithm: null } } },
      `${F}.onStoreError.fallback.algorithm`,
    ],
  ])('a bad fallback is reported on its own field: %s', (_label, fallback, field) => {
    expect(() => createLimiter(fallbackOf(fallback as object))).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field }),
    );
  });

  it('a fallback that refers back to itself, directly or in a cycle, is an InvalidOptionError, not a stack overflow', () => {
    const direct: LimiterOptions = good();
    direct.onStoreError = { fallback: direct };
    expect(() => createLimiter(direct)).toThrow(
      expect.objectContaining({
        code: 'RL_INVALID_OPTION',
        field: F,
        message: expect.stringMatching(/refers back to itself/),
      }),
    );
    const a: LimiterOptions = good();
    const b: LimiterOptions = good();
    a.onStoreError = { fallback: b };
    b.onStoreError = { fallback: a };
    expect(() => createLimiter(a)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: `${F}.onStoreError.fallback` }),
    );
    // The same options twice, but not in a cycle: fine.
    const shared = good();
    expect(() =>
      createLimiter({ ...good(), onStoreError: { fallback: { ...good(), onStoreError: { fallback: shared } } } }),
    ).not.toThrow();
    expect(() => createLimiter({ ...good(), onStoreError: { fallback: shared } })).not.toThrow();
  });
});
