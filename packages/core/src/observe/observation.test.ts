/**
 * The observer seam of a limiter: one event per decision with its outcome, reason, cost, delay and
 * store duration; store errors and circuit changes; keys only on request; an observer that throws
 * never breaks a call.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { combineLimiters } from '../compose/group.js';
import { StoreError } from '../errors.js';
import type { CircuitEvent, DecisionEvent, Observer, StoreErrorObservation } from './observer.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter } from '../limiter/limiter.js';

/** An observer that keeps copies of what it heard. */
function recorder() {
  const decisions: DecisionEvent[] = [];
  const errors: Omit<StoreErrorObservation, 'error'>[] = [];
  const circuits: CircuitEvent[] = [];
  const observer: Observer = {
    decision: (event) => decisions.push({ ...event }),
    storeError: ({ error: _error, ...event }) => errors.push(event),
    circuit: (event) => circuits.push({ ...event }),
  };
  return { observer, decisions, errors, circuits };
}

const perHour = (limit: number) => fixedWindow({ limit, window: '1h' });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('observing a limiter', () => {
  it('tells one event per decision: allowed, then denied, with the cost, the limit’s name and no key', () => {
    const { observer, decisions } = recorder();
    const limiter = createLimiter({
      algorithm: perHour(3),
      store: new TestStore(),
      clock: () => 0,
      prefix: 'api',
      observer,
    });
    limiter.consumeSync('ann', 2);
    limiter.consumeSync('ann', 2);
    expect(decisions.map(({ storeMs: _storeMs, ...rest }) => rest)).toEqual([
      { limit: 'api', outcome: 'allowed', reason: undefined, cost: 2, delayMs: 0, key: undefined },
      { limit: 'api', outcome: 'denied', reason: undefined, cost: 2, delayMs: 0, key: undefined },
    ]);
  });

  it('measures the store call on the limiter’s timers, and leaves it out for a deny-cache answer', async () => {
    const timers = new FakeTimers();
    const store = new TestStore({ answers: 'manual' });
    const { observer, decisions } = recorder();
    const limiter = createLimiter({
      algorithm: perHour(1),
      store,
      clock: () => 0,
      timeout: false,
      timers,
      name: 'per-user',
      observer,
    });
    for (const wait of [7, 3]) {
      const pending = limiter.consume('ann');
      timers.advance(wait);
      store.answerAll();
      await pending;
    }
    await limiter.consume('ann');
    expect(decisions.map((d) => [d.limit, d.outcome, d.reason, d.storeMs])).toEqual([
      ['per-user', 'allowed', undefined, 7],
      ['per-user', 'denied', undefined, 3],
      ['per-user', 'denied', 'deny-cache', undefined],
    ]);
  });

  it('names the failure policy’s outcomes and the shaper’s delays', () => {
    const failing = new TestStore();
    failing.failure = new StoreError('down');
    const outcomes: string[] = [];
    const observer: Observer = { decision: (event) => outcomes.push(event.outcome) };
    createLimiter({ algorithm: perHour(5), store: failing, observer }).consumeSync('k');
    createLimiter({ algorithm: perHour(5), store: failing, observer, onStoreError: 'allow' }).consumeSync('k');
    createLimiter({
      algorithm: perHour(5),
      store: failing,
      observer,
      onStoreError: { fallback: { algorithm: perHour(5), store: new TestStore() } },
    }).consumeSync('k');
    const shaper = createLimiter({
      algorithm: leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }),
      store: new TestStore(),
      clock: () => 0,
      observer,
    });
    shaper.consumeSync('k');
    shaper.consumeSync('k');
    expect(outcomes).toEqual(['failed_closed', 'failed_open', 'fallback', 'allowed', 'delayed']);
  });

  it('gives the key only with observeKeys, without the limiter’s prefix', () => {
    const { observer, decisions } = recorder();
    createLimiter({
      algorithm: perHour(3),
      store: new TestStore(),
      prefix: 'api',
      observer,
      observeKeys: true,
    }).consumeSync('ann');
    expect(decisions[0]!.key).toBe('ann');
  });

  it('tells store errors and the circuit opening and closing', async () => {
    const timers = new FakeTimers();
    let now = 0;
    const store = new TestStore({ answers: 'manual' });
    const { observer, errors, circuits } = recorder();
    const limiter = createLimiter({
      algorithm: perHour(5),
      store,
      clock: () => now,
      timers,
      timeout: false,
      storeFailureThreshold: 2,
      storeRetryInterval: 1000,
      observer,
      name: 'db',
    });
    for (let i = 0; i < 2; i++) {
      const pending = limiter.consume('k');
      store.failAll();
      await pending;
    }
    now = 1000;
    const probe = limiter.consume('k');
    store.answerAll();
    await probe;
    expect(errors).toEqual([
      { limit: 'db', kind: 'store-error', action: 'deny', key: undefined },
      { limit: 'db', kind: 'store-error', action: 'deny', key: undefined },
    ]);
    expect(circuits).toEqual([
      { limit: 'db', state: 'open', domain: undefined, reason: 'store-error' },
      { limit: 'db', state: 'closed', domain: undefined, reason: undefined },
    ]);
  });

  it('goes on when an observer throws, and reports it once', () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const observer: Observer = {
      decision: () => {
        throw new Error('metrics down');
      },
    };
    const limiter = createLimiter({ algorithm: perHour(3), store: new TestStore(), clock: () => 0, observer });
    expect([limiter.consumeSync('k').allowed, limiter.consumeSync('k').remaining]).toEqual([true, 1]);
    expect(warning).toHaveBeenCalledTimes(1);
    expect(warning).toHaveBeenCalledWith(
      expect.stringMatching(/metrics down/),
      expect.objectContaining({ code: 'RL_OBSERVER_ERROR' }),
    );
  });

  it('an async observer that rejects, in every method, breaks nothing: each rejection is reported once per observer, none is left unhandled', async () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const rejecting = (what: string) => async (): Promise<void> => {
        throw new Error(`${what} down`);
      };
      const observers: Observer[] = [1, 2].map(() => ({
        decision: rejecting('decision'),
        storeError: rejecting('storeError'),
        circuit: rejecting('circuit'),
        hold: rejecting('hold'),
        reservationCancelled: rejecting('reservationCancelled'),
      }));
      const store = new TestStore();
      const limiter = createLimiter({
        algorithm: perHour(3),
        store,
        clock: () => 0,
        observer: observers[0],
        storeFailureThreshold: 1,
      });
      limiter.observe(observers[1]!);
      expect(limiter.consumeSync('k').allowed).toBe(true);
      const slot = await limiter.reserve('k', 1, { maxDelay: 0 });
      await slot.cancel();
      store.failure = new StoreError('down');
      expect(limiter.consumeSync('k')).toMatchObject({ allowed: false, reason: 'store-error' });
      // Unhandled rejections are reported after the microtasks and a macrotask.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      expect(warning).toHaveBeenCalledTimes(2);
      expect(warning).toHaveBeenCalledWith(
        expect.stringMatching(/decision down/),
        expect.objectContaining({ code: 'RL_OBSERVER_ERROR' }),
      );
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('refuses an observer whose methods are not functions', () => {
    expect(() =>
      createLimiter({ algorithm: perHour(3), store: new TestStore(), observer: { decision: 1 } as never }),
    ).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.observer.decision' }));
    expect(() =>
      createLimiter({ algorithm: perHour(3), store: new TestStore(), observer: { adaptive: 'log' } as never }),
    ).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'createLimiter.observer.adaptive' }));
    expect(() => createLimiter({ algorithm: perHour(3), store: new TestStore(), name: '' })).toThrow(
      expect.objectContaining({ field: 'createLimiter.name' }),
    );
  });

  it('observes every limit of a group under its own name', async () => {
    const { observer, decisions } = recorder();
    const store = new TestStore();
    const perUser = createLimiter({ algorithm: perHour(1), store, prefix: 'user', clock: () => 0 });
    const global = createLimiter({
      algorithm: tokenBucket({ capacity: 10, refillRate: 1 }),
      store,
      prefix: 'all',
      clock: () => 0,
    });
    const group = combineLimiters([perUser, global], { observer });
    await group.consume(['ann', 'all']);
    await group.consume(['ann', 'all']);
    expect(decisions.map((d) => [d.limit, d.outcome])).toEqual([
      ['user', 'allowed'],
      ['all', 'allowed'],
      ['user', 'denied'],
    ]);
  });
});
