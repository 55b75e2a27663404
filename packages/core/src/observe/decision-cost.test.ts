/**
 * What an observer costs a decision, counted: the limiter reads its timers' clock only for observers
 * that hear decisions and read their store duration, builds nothing for observers without `decision`,
 * and an observed consume decides on the fast path what the full charge path would decide.
 */
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { StoreError } from '../errors.js';
import { combineLimiters } from '../compose/group.js';
import { createLimiter } from '../limiter/limiter.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore } from '../testing/test-store.js';
import type { DecisionEvent, Observer, StoreErrorObservation } from './observer.js';

/** Fake timers that count the clock's readings. */
class CountingTimers extends FakeTimers {
  reads = 0;
  override now(): number {
    this.reads++;
    return super.now();
  }
}

const perHour = (limit: number) => fixedWindow({ limit, window: '1h' });

/** A limiter on a synchronous (local) test store, observed by `observers`, its clock reads counted. */
function observed(observers: Observer[], answers: 'sync' | 'async' = 'sync') {
  const timers = new CountingTimers();
  const store = new TestStore({ answers });
  const limiter = createLimiter({ algorithm: perHour(2), store, timers, clock: () => 0, name: 'api', timeout: false });
  for (const observer of observers) limiter.observe(observer);
  return { limiter, timers, store };
}

/** Ten decisions of `limiter`, by every verb that decides one. */
async function decideTen(limiter: ReturnType<typeof observed>['limiter'], synchronous: boolean): Promise<void> {
  for (let i = 0; i < 5; i++) {
    if (synchronous) limiter.consumeSync(`k${i}`);
    await limiter.consume(`k${i}`);
  }
}

describe('what an observer costs a decision', () => {
  it.each([
    ['no observer', 0, []],
    ['an observer of store errors only', 0, [{ storeError: () => undefined }]],
    ['an observer of circuits and holds only', 0, [{ circuit: () => undefined, hold: () => undefined }]],
    ['an observer of decisions without store durations', 0, [{ decision: () => undefined, storeDurations: false }]],
    ['an observer of decisions', 2, [{ decision: () => undefined }]],
    [
      'two observers of decisions, one reading durations',
      2,
      [{ decision: () => undefined, storeDurations: false }, { decision: () => undefined }],
    ],
  ] as [string, number, Observer[]][])('%s: %i clock readings per decision', async (_, perDecision, observers) => {
    const local = observed(observers);
    await decideTen(local.limiter, true);
    expect(local.timers.reads).toBe(10 * perDecision);
    const remote = observed(observers, 'async');
    await decideTen(remote.limiter, false);
    expect(remote.timers.reads).toBe(5 * perDecision);
  });

  it('an observer without `decision` still hears the store errors, and nothing else per decision', async () => {
    const errors: StoreErrorObservation['kind'][] = [];
    const { limiter, store, timers } = observed([{ storeError: (event) => errors.push(event.kind) }]);
    store.failure = new StoreError('down');
    limiter.consumeSync('ann');
    await limiter.consume('bob');
    expect(errors).toEqual(['store-error', 'store-error']);
    expect(timers.reads).toBe(0);
  });

  it('an observer with storeDurations: false hears no duration; another observer of the limiter still does', () => {
    const without: (number | undefined)[] = [];
    const withDurations: (number | undefined)[] = [];
    const { limiter } = observed([
      { decision: (event) => without.push(event.storeMs), storeDurations: false },
      { decision: (event) => withDurations.push(event.storeMs) },
    ]);
    limiter.consumeSync('ann');
    expect([without, withDurations]).toEqual([[undefined], [0]]);
  });

  it('refuses a storeDurations that is not a boolean', () => {
    const limiter = createLimiter({ algorithm: perHour(1), store: new TestStore() });
    expect(() => limiter.observe({ decision: () => undefined, storeDurations: 'no' as never })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'limiter.observe.observer.storeDurations' }),
    );
  });

  it('an observed consume tells what the full charge path tells: the store’s answers, the failure policy’s, a group’s', () => {
    /** The events of `decide` on a fresh observed limiter that fails open, its store failing from the third call. */
    const eventsOf = (decide: (limiter: ReturnType<typeof observed>['limiter']) => void): DecisionEvent[] => {
      const events: DecisionEvent[] = [];
      const timers = new CountingTimers();
      const store = new TestStore();
      const limiter = createLimiter({
        algorithm: perHour(1),
        store,
        timers,
        clock: () => 0,
        name: 'api',
        onStoreError: 'allow',
        observer: { decision: (event) => events.push({ ...event }) },
      });
      for (let i = 0; i < 4; i++) {
        if (i === 2) store.failure = new StoreError('down');
        decide(limiter);
      }
      return events;
    };
    const fast = eventsOf((limiter) => limiter.consumeSync('ann'));
    // A per-call algorithm (the limiter's own) takes the full charge path.
    const full = eventsOf((limiter) => limiter.consumeSync('ann', 1, limiter.algorithm!));
    const grouped = eventsOf((limiter) => combineLimiters([limiter]).consumeSync('ann'));
    expect(fast.map((e) => [e.outcome, e.reason])).toEqual([
      ['allowed', undefined],
      ['denied', undefined],
      ['failed_open', 'store-error'],
      ['failed_open', 'store-error'],
    ]);
    expect(fast).toEqual(full);
    expect(grouped.map((e) => [e.outcome, e.reason, e.storeMs])).toEqual(
      fast.map((e) => [e.outcome, e.reason, e.storeMs]),
    );
  });
});
