/**
 * The limiter's verbs and its entry points for the composition engine: the same decisions
 * synchronously and with a promise, validation once (key, cost, maxCost), and the checked entry
 * points' promise-or-value contract. The timeout, circuit, deny cache and failure policy have their
 * own files beside this one.
 */
import { describe, expect, it } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { StoreClosedError, StoreError } from '../errors.js';
import { TestStore } from '../testing/test-store.js';
import { coreOf } from './core-registry.js';
import { StepStore } from '../testing/step-store.js';
import { createLimiter, type Limiter } from './limiter.js';
import type { ChargeAnswer } from './charge-path.js';
import type { MaybePromise } from '../store/interface.js';
import type { StoreErrorEvent } from './events.js';
import type { LimiterOptions } from './options.js';

const bucket = (capacity = 3) => tokenBucket({ capacity, refillRate: 1 });

describe('consumeSync', () => {
  it('gives the same decisions as consume on a local store, synchronously', async () => {
    let now = 0;
    const store = new TestStore();
    const sync = createLimiter({ algorithm: bucket(), store, clock: () => now, prefix: 'sync' });
    const promised = createLimiter({ algorithm: bucket(), store, clock: () => now, prefix: 'promised' });
    for (const [t, cost] of [
      [0, 1],
      [0, 2],
      [0, 1],
      [500, 1],
      [1000, 1],
      [1000, 3],
    ] as const) {
      now = t;
      const a = sync.consumeSync('k', cost);
      expect(a).not.toBeInstanceOf(Promise);
      expect(a).toEqual(await promised.consume('k', cost));
    }
    expect(sync.consumeSync('k').allowed).toBe(false);
  });

  it('throws typed errors synchronously and refuses remote stores', () => {
    const limiter = createLimiter({ algorithm: bucket(), store: new TestStore() });
    expect(() => limiter.consumeSync('k', Number.NaN)).toThrow(expect.objectContaining({ code: 'RL_INVALID_COST' }));
    expect(() => limiter.consumeSync('k', 4)).toThrow(expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }));
    expect(() => limiter.consumeSync('')).toThrow(expect.objectContaining({ code: 'RL_INVALID_KEY' }));
    const remote = createLimiter({ algorithm: bucket(), store: new TestStore({ answers: 'manual' }) });
    expect(() => remote.consumeSync('k')).toThrow(expect.objectContaining({ code: 'RL_UNSUPPORTED' }));
  });
});

describe('maxCost', () => {
  it('defaults to the algorithm’s maxCost; a larger cost is rejected by every verb that takes one', async () => {
    expect(createLimiter({ algorithm: bucket(), store: new TestStore() }).maxCost).toBe(3);
    const limiter = createLimiter({ algorithm: bucket(), store: new TestStore(), maxCost: 2 });
    expect(limiter.maxCost).toBe(2);
    expect(limiter.consumeSync('k', 2).allowed).toBe(true);
    expect(() => limiter.consumeSync('k', 2.5)).toThrow(
      expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY', message: expect.stringMatching(/maxCost 2/) }),
    );
    await expect(limiter.consume('k', 3)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    await expect(limiter.peek('k', 3)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    await expect(limiter.undo('k', 3)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
  });

  it('must be a finite number greater than 0 and at most the algorithm’s maxCost', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 4, '2']) {
      expect(() => createLimiter({ algorithm: bucket(), store: new TestStore(), maxCost: bad as number })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.maxCost' }),
      );
    }
  });
});

describe('acquire', () => {
  it('is synchronous underneath on a local store, and a permit is given back by release()', async () => {
    const store = new TestStore();
    const limiter = createLimiter({ algorithm: concurrency({ limit: 1 }), store });
    const held = coreOf(limiter)!.acquire('k');
    expect(held).not.toBeInstanceOf(Promise);
    expect((await limiter.acquire('k')).allowed).toBe(false);
    const permit = await held;
    await permit.release();
    await permit.release();
    expect((await limiter.acquire('k')).allowed).toBe(true);
    expect(store.calls.filter((c) => c.startsWith('release'))).toHaveLength(1);
  });

  it('goes through the same circuit as consume', async () => {
    const store = new TestStore({ answers: 'manual' });
    const limiter = createLimiter({
      algorithm: concurrency({ limit: 1 }),
      store,
      timeout: false,
      storeFailureThreshold: 1,
    });
    const failing = limiter.acquire('k');
    store.failAll();
    expect(await failing).toMatchObject({ allowed: false, reason: 'store-error' });
    const calls = store.calls.length;
    const skipped = await limiter.acquire('k');
    expect(skipped).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(store.calls.length).toBe(calls);
    await skipped.release(); // nothing to release
  });

  it('is for concurrency limits only, as consume is for rates', async () => {
    await expect(createLimiter({ algorithm: bucket(), store: new TestStore() }).acquire('k')).rejects.toMatchObject({
      code: 'RL_UNSUPPORTED',
    });
    await expect(
      createLimiter({ algorithm: concurrency({ limit: 1 }), store: new TestStore() }).consume('k'),
    ).rejects.toMatchObject({ code: 'RL_UNSUPPORTED' });
    await expect(
      createLimiter({ algorithm: concurrency({ limit: 1 }), store: new TestStore() }).acquire(''),
    ).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
  });
});

/** A charge of `cost` units of `key` down `limiter`'s core, and a give-back right after one. */
function charge(limiter: Limiter, key: string, cost: number): MaybePromise<ChargeAnswer> {
  const core = coreOf(limiter)!;
  return core.charge(core.chargeOf(key, cost, limiter.algorithm!));
}
function giveBack(limiter: Limiter, key: string, cost: number): MaybePromise<void> {
  const core = coreOf(limiter)!;
  return core.giveBack(core.chargeOf(key, cost, limiter.algorithm!));
}

describe('the core: the one charge path beneath the verbs', () => {
  it('a charge decides like consume, synchronously on a synchronous limiter, with a promise otherwise', async () => {
    const local = createLimiter({ algorithm: bucket(), store: new TestStore(), clock: () => 0 });
    const answer = charge(local, 'k', 2);
    expect(answer).not.toBeInstanceOf(Promise);
    const decision = (answer as ChargeAnswer).decision;
    expect(decision).toMatchObject({ allowed: true, remaining: 1 });
    const store = new TestStore({ answers: 'manual' });
    const remote = createLimiter({ algorithm: bucket(), store, clock: () => 0, timeout: false });
    const pending = charge(remote, 'k', 2);
    expect(pending).toBeInstanceOf(Promise);
    store.answerAll();
    expect((await pending).decision).toEqual(decision);
  });

  it('an undo gives units back, and never rejects: a failure is a storeError event', async () => {
    const store = new TestStore();
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => 0 });
    charge(limiter, 'k', 3);
    expect(giveBack(limiter, 'k', 2)).toBeUndefined();
    expect(limiter.consumeSync('k', 2).allowed).toBe(true);

    const events: StoreErrorEvent[] = [];
    limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    store.failure = new StoreError('disk on fire');
    expect(() => giveBack(limiter, 'k', 1)).not.toThrow();
    const remote = new TestStore({ answers: 'manual' });
    const remoteLimiter = createLimiter({ algorithm: bucket(), store: remote, timeout: false });
    remoteLimiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    const undone = giveBack(remoteLimiter, 'k', 1);
    remote.failAll();
    await expect(undone).resolves.toBeUndefined();
    expect(events.map((e) => [e.reason, e.action, e.key])).toEqual([
      ['store-error', 'deny', 'k'],
      ['store-error', 'deny', 'k'],
    ]);
  });
});

describe('reset', () => {
  it('forgets the key once the store has done it; a failing store makes it reject with the StoreError after a storeError event, and the key keeps its state', async () => {
    const store = new TestStore({ answers: 'manual' });
    store.holdResets = true;
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => 0, timeout: false });
    const events: StoreErrorEvent[] = [];
    limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    const used = limiter.consume('k', 3);
    store.answerAll();
    expect((await used).remaining).toBe(0);

    const failing = limiter.reset('k');
    store.failAll('connection lost');
    await expect(failing).rejects.toMatchObject({
      code: 'RL_STORE_ERROR',
      message: expect.stringMatching(/^connection lost\. See .*errors\.md#rl_store_error$/),
    });
    expect(events.map((e) => [e.reason, e.action, e.key])).toEqual([['store-error', 'deny', 'k']]);
    expect(store.state.peek('k', bucket(), 0, 0).remaining).toBe(0);

    const reset = limiter.reset('k');
    store.answerAll();
    await expect(reset).resolves.toBeUndefined();
    expect(store.state.peek('k', bucket(), 0, 0).remaining).toBe(3);
  });

  it('a local store that throws: the error becomes a StoreError (cause kept), reported, then thrown; a closed store’s misuse error is thrown as it is', async () => {
    const store = new TestStore();
    const limiter = createLimiter({ algorithm: bucket(), store });
    const events: StoreErrorEvent[] = [];
    limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
    const disk = new Error('disk on fire');
    store.failure = disk;
    const error = await limiter.reset('k').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ cause: disk, message: expect.stringMatching(/disk on fire/) });
    expect(events).toEqual([expect.objectContaining({ error, reason: 'store-error', action: 'deny', key: 'k' })]);
    store.failure = new StoreClosedError();
    await expect(limiter.reset('k')).rejects.toMatchObject({ code: 'RL_STORE_CLOSED' });
    expect(events).toHaveLength(1);
  });
});

describe('timer options', () => {
  it('timeout becomes a timer: above 2^31 − 1 ms (about 24.8 days) it is rejected, naming the field', () => {
    const make = (timeout: LimiterOptions['timeout']) => () =>
      createLimiter({ algorithm: bucket(), store: new TestStore({ answers: 'manual' }), timeout });
    for (const bad of ['30d', 2 ** 31, '25d'] as const) {
      expect(make(bad)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.timeout' }));
    }
    expect(make(2 ** 31 - 1)).not.toThrow();
    expect(make('24d')).not.toThrow();
  });

  it('storeRetryInterval is not a timer (the circuit compares it with the clock): a long one is accepted', () => {
    expect(() =>
      createLimiter({ algorithm: bucket(), store: new TestStore({ answers: 'manual' }), storeRetryInterval: '30d' }),
    ).not.toThrow();
  });
});

describe('a clock that returns a time that is not finite, or beyond the range of a Date', () => {
  // 1e300 once, then normal times again, must not leave the key's state far in the future.
  const bad = [
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    '1000' as unknown as number,
    1e300,
    -1e300,
    8.64e15 + 1,
  ];

  it.each(bad)(
    'a reading of %s fails the call with an InvalidOptionError on createLimiter.clock; the store is never called and the key is intact',
    async (reading) => {
      let now = 0;
      const store = new TestStore();
      const limiter = createLimiter({ algorithm: bucket(), store, clock: () => now });
      const events: StoreErrorEvent[] = [];
      limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
      expect(limiter.consumeSync('k').remaining).toBe(2);
      now = reading;
      const clockError = expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.clock' });
      expect(() => limiter.consumeSync('k')).toThrow(clockError);
      await expect(limiter.consume('k')).rejects.toEqual(clockError);
      await expect(limiter.peek('k')).rejects.toEqual(clockError);
      // A give-back never rejects: it is lost and reported.
      await expect(limiter.undo('k')).resolves.toBeUndefined();
      expect(events.map((e) => e.error)).toEqual([clockError]);
      expect(store.calls).toEqual(['charge k']);
      now = 0;
      expect(limiter.consumeSync('k').remaining).toBe(1);
    },
  );

  it('accepts the ends of the range of a Date', () => {
    for (const edge of [8.64e15, -8.64e15]) {
      const limiter = createLimiter({ algorithm: bucket(), store: new TestStore(), clock: () => edge });
      expect(limiter.consumeSync('k').allowed).toBe(true);
    }
  });

  it('on a remote store with a deny cache and on a concurrency limit, too', async () => {
    let now: number = Number.NaN;
    const store = new TestStore({ answers: 'manual' });
    const limiter = createLimiter({ algorithm: bucket(), store, clock: () => now, timeout: false });
    await expect(limiter.consume('k')).rejects.toMatchObject({ field: 'createLimiter.clock' });
    const permits = createLimiter({ algorithm: concurrency({ limit: 1 }), store, clock: () => now, timeout: false });
    await expect(permits.acquire('k')).rejects.toMatchObject({ field: 'createLimiter.clock' });
    expect(store.calls).toEqual([]);
    now = 0;
    const fine = limiter.consume('k');
    store.answerAll();
    expect((await fine).remaining).toBe(2);
  });
});

describe('undo with the decision of the request', () => {
  it('gives back only what the store charged, to the window it was charged in', async () => {
    let now = 990;
    const store = new TestStore();
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 2, window: '1s' }), store, clock: () => now });
    const early = await limiter.consume('k');
    now = 1_000;
    const inWindow = await limiter.consume('k');
    await limiter.consume('k');
    const denied = await limiter.consume('k');
    expect(denied.allowed).toBe(false);
    const undos = () => store.calls.filter((call) => call.startsWith('giveBack')).length;
    // A denial charged nothing: no store call.
    await limiter.undo('k', 1, denied);
    expect(undos()).toBe(0);
    // Charged in the window before: the new window keeps its count.
    await limiter.undo('k', 1, early);
    expect((await limiter.peek('k')).remaining).toBe(0);
    await limiter.undo('k', 1, inWindow);
    expect((await limiter.peek('k')).remaining).toBe(1);
    await expect(limiter.undo('k', 1, { allowed: true } as never)).rejects.toMatchObject({
      code: 'RL_INVALID_OPTION',
      field: 'limiter.undo.decision',
    });
    await expect(
      limiter.undo('k', 1, fixedWindow({ limit: 2, window: '1s' }), { allowed: true } as never),
    ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
  });

  it('gives nothing back for a decision of the failure policy', async () => {
    const store = new TestStore();
    const limiter = createLimiter({ algorithm: bucket(), store, onStoreError: 'allow', clock: () => 5 });
    store.failure = new StoreError('down');
    const admitted = await limiter.consume('k');
    expect(admitted).toMatchObject({ allowed: true, reason: 'store-error', at: 5 });
    store.failure = undefined;
    await limiter.undo('k', 1, admitted);
    expect(store.calls.filter((call) => call.startsWith('giveBack'))).toEqual([]);
  });
});

describe('blockDuration', () => {
  it('is a duration from 1 ms on a rate limit, on a store that runs lockouts', () => {
    const store = new TestStore();
    expect(createLimiter({ algorithm: bucket(), store, blockDuration: '15m' }).algorithm).toMatchObject({
      blockMs: 900_000,
      script: { name: 'token-bucket-block' },
    });
    for (const bad of [0, -1, 0.5, Number.NaN, '1x', 1e16, null]) {
      expect(() => createLimiter({ algorithm: bucket(), store, blockDuration: bad as never })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.blockDuration' }),
      );
    }
    expect(() => createLimiter({ algorithm: concurrency({ limit: 2 }), store, blockDuration: '1h' })).toThrow(
      expect.objectContaining({
        code: 'RL_INVALID_OPTION',
        field: 'createLimiter.blockDuration',
        message: expect.stringMatching(/concurrency/),
      }),
    );
    const noBlocks = new StepStore({ blocks: false });
    expect(() => createLimiter({ algorithm: bucket(), store: noBlocks, blockDuration: '1h' })).toThrow(
      expect.objectContaining({ code: 'RL_UNSUPPORTED' }),
    );
  });

  it('applies to algorithms given per call, derived once per algorithm object', async () => {
    let now = 0;
    const limiter = createLimiter({ store: new TestStore(), clock: () => now, blockDuration: '1s' });
    const plan = fixedWindow({ limit: 1, window: '1m' });
    expect(await limiter.consume('k', 1, plan)).toMatchObject({ allowed: true });
    expect(await limiter.consume('k', 1, plan)).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
    now = 500;
    expect(await limiter.consume('k', 1, plan)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(coreOf(limiter)!.checkCallAlgorithm(plan)).toBe(coreOf(limiter)!.checkCallAlgorithm(plan));
  });
});
