/**
 * The deadline list alone (a table of calls started and answered on fake timers), its race of an
 * answer against the deadline, and the limiter's store timeout built on it.
 */
import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../algorithm.js';
import { concurrency } from '../algorithms/concurrency.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import type { Decision } from '../decision.js';
import { StoreTimeoutError } from '../errors.js';
import { CONTROL_TIMEOUT_FLOOR_MS } from './store-guard.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { TestStore } from '../testing/test-store.js';
import { combineLimiters } from '../compose/group.js';
import { systemTimers } from '../timers.js';
import { Deadlines, type Deadline } from './deadlines.js';
import { createLimiter } from './limiter.js';
import type { StoreErrorEvent } from './events.js';
import type { LimiterOptions } from './options.js';

interface Case {
  name: string;
  timeoutMs: number;
  /** When each call starts (its index is its name). */
  starts: number[];
  /** `[time, call]`: the call is answered at that time. */
  answers: [number, number][];
  /** `[call, time]`: the calls that time out, and when, in the order they do. */
  timeouts: [number, number][];
  /** Timers left scheduled at the end. */
  pending: number;
}

const cases: Case[] = [
  {
    name: 'an unanswered call times out exactly at its deadline',
    timeoutMs: 50,
    starts: [0],
    answers: [],
    timeouts: [[0, 50]],
    pending: 0,
  },
  {
    name: 'a call answered before its deadline never times out',
    timeoutMs: 50,
    starts: [0],
    answers: [[49, 0]],
    timeouts: [],
    pending: 0,
  },
  {
    name: 'calls time out in order, each at its own deadline',
    timeoutMs: 50,
    starts: [0, 10, 30],
    answers: [],
    timeouts: [
      [0, 50],
      [1, 60],
      [2, 80],
    ],
    pending: 0,
  },
  {
    name: 'an answered call leaves the list; the others keep their deadlines',
    timeoutMs: 50,
    starts: [0, 10, 30],
    answers: [[20, 1]],
    timeouts: [
      [0, 50],
      [2, 80],
    ],
    pending: 0,
  },
  {
    name: 'answering the head moves the timer to the next deadline',
    timeoutMs: 50,
    starts: [0, 40],
    answers: [[5, 0]],
    timeouts: [[1, 90]],
    pending: 0,
  },
  {
    name: 'a call started after the list emptied gets a fresh timer',
    timeoutMs: 20,
    starts: [0, 100],
    answers: [],
    timeouts: [
      [0, 20],
      [1, 120],
    ],
    pending: 0,
  },
  {
    name: 'an answer after the deadline changes nothing',
    timeoutMs: 20,
    starts: [0],
    answers: [[30, 0]],
    timeouts: [[0, 20]],
    pending: 0,
  },
];

describe('Deadlines', () => {
  it.each(cases)('$name', async ({ timeoutMs, starts, answers, timeouts, pending }) => {
    const timers = new FakeTimers();
    const deadlines = new Deadlines(timeoutMs, timers);
    const entries: Deadline[] = [];
    const timedOut: [number, number][] = [];
    const lateAnswers: number[] = [];
    const events = [
      ...starts.map((t, call) => ({ t, call, start: true })),
      ...answers.map(([t, call]) => ({ t, call, start: false })),
    ].sort((a, b) => a.t - b.t);
    for (const { t, call, start } of events) {
      await timers.advanceAsync(t - timers.now());
      if (start) {
        entries[call] = deadlines.add((error) => {
          expect(error).toBeInstanceOf(StoreTimeoutError);
          timedOut.push([call, timers.now()]);
        });
      } else if (!deadlines.answered(entries[call]!)) lateAnswers.push(call);
    }
    await timers.advanceAsync(1_000);
    expect(timedOut).toEqual(timeouts);
    // A call answered after it timed out is told so.
    expect(lateAnswers).toEqual(
      answers.filter(([, call]) => timeouts.some(([c]) => c === call)).map(([, call]) => call),
    );
    expect(timers.pending).toBe(pending);
  });

  it('keeps one timer for any number of calls in flight', () => {
    const timers = new FakeTimers();
    const deadlines = new Deadlines(50, timers);
    for (let i = 0; i < 100; i++) deadlines.add(() => undefined);
    expect(timers.pending).toBe(1);
  });
});

describe('Deadlines.race', () => {
  const setup = () => {
    const timers = new FakeTimers();
    const deadlines = new Deadlines(20, timers);
    let answer!: (value: string) => void;
    let fail!: (error: Error) => void;
    const value = new Promise<string>((resolve, reject) => {
      answer = resolve;
      fail = reject;
    });
    const late: string[] = [];
    const result = deadlines.race(
      value,
      (v) => `answered ${v}`,
      (error) => (error instanceof StoreTimeoutError ? 'timed out' : `failed ${(error as Error).message}`),
      (v) => void late.push(v),
    );
    return { timers, answer, fail, late, result };
  };

  it('an answer in time wins', async () => {
    const { timers, answer, result } = setup();
    answer('yes');
    await timers.advanceAsync(20);
    expect(await result).toBe('answered yes');
  });

  it('a rejection in time goes to the error handler', async () => {
    const { fail, result } = setup();
    fail(new Error('down'));
    expect(await result).toBe('failed down');
  });

  it('the deadline wins over a late answer, which goes to onLate', async () => {
    const { timers, answer, late, result } = setup();
    await timers.advanceAsync(20);
    expect(await result).toBe('timed out');
    answer('too late');
    await timers.advanceAsync(0);
    expect(late).toEqual(['too late']);
  });

  it('a late rejection is dropped, never unhandled', async () => {
    const { timers, fail, late, result } = setup();
    await timers.advanceAsync(20);
    expect(await result).toBe('timed out');
    fail(new Error('late'));
    await timers.advanceAsync(0);
    expect(late).toEqual([]);
  });

  it('a handler that throws rejects the result', async () => {
    const timers = new FakeTimers();
    const deadlines = new Deadlines(20, timers);
    const result = deadlines.race(
      Promise.resolve(1),
      () => {
        throw new Error('handler');
      },
      () => 0,
    );
    await expect(result).rejects.toThrow('handler');
  });
});

const bucket = () => tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' });

/** A limiter on a store that answers only when told, with a 20 ms timeout on fake timers, and its storeError events. */
function slowStoreLimiter(algorithm: Algorithm, options: Partial<LimiterOptions> = {}) {
  const store = new TestStore({ answers: 'manual' });
  const timers = new FakeTimers();
  const limiter = createLimiter({ algorithm, store, timeout: 20, timers, ...options });
  const events: StoreErrorEvent[] = [];
  limiter.on('storeError', (e: StoreErrorEvent) => events.push(e));
  return { store, timers, limiter, events };
}

describe('the limiter timeout', () => {
  it('a call that does not answer within the timeout resolves by the policy (reason timeout); its late answer is ignored', async () => {
    const { store, timers, limiter, events } = slowStoreLimiter(bucket());
    let decision: Decision | undefined;
    void limiter.consume('k').then((d) => (decision = d));
    await timers.advanceAsync(19);
    expect(decision).toBeUndefined();
    await timers.advanceAsync(1);
    expect(decision).toMatchObject({ allowed: false, reason: 'timeout' });
    expect(events).toMatchObject([{ reason: 'timeout', action: 'deny', key: 'k' }]);
    expect(timers.pending).toBe(0);
    store.answerAll(); // the late answer settles nothing and throws nothing
    await timers.advanceAsync(0);
  });

  it('a permit granted after its acquire timed out is released when the late answer arrives', async () => {
    const { store, timers, limiter } = slowStoreLimiter(concurrency({ limit: 1 }));
    const pending = limiter.acquire('k');
    await timers.advanceAsync(20);
    const timedOut = await pending;
    expect(timedOut.reason).toBe('timeout');
    store.answerAll(); // the store grants the permit late
    await timers.advanceAsync(0);
    expect(store.leasesOf('k')?.size).toBe(0);
    expect(store.calls).toEqual(['acquire k', 'release k']);
  });

  it('an undo that does not answer within the timeout is reported, never rejected', async () => {
    const { timers, limiter, events } = slowStoreLimiter(bucket());
    const undone = limiter.undo('k', 1);
    await timers.advanceAsync(20);
    await expect(undone).resolves.toBeUndefined();
    expect(events).toMatchObject([{ reason: 'timeout', action: 'deny', key: 'k' }]);
  });
});

describe('the limiter timeout: resets', () => {
  it('a reset that does not answer rejects with the StoreTimeoutError after a storeError event at the control floor (1 s, past the 20 ms timeout of a request), never later', async () => {
    const { store, timers, limiter, events } = slowStoreLimiter(bucket());
    store.holdResets = true;
    let outcome: unknown = 'pending';
    void limiter.reset('k').then(
      () => (outcome = 'reset'),
      (error: unknown) => (outcome = error),
    );
    // A control may wait for more than one round trip (the Redis store's confirmations): the
    // limiter's request timeout (20 ms here) does not bound it, CONTROL_TIMEOUT_FLOOR_MS does.
    await timers.advanceAsync(20);
    expect(outcome).toBe('pending');
    await timers.advanceAsync(CONTROL_TIMEOUT_FLOOR_MS - 21);
    expect(outcome).toBe('pending');
    expect(events).toEqual([]);
    await timers.advanceAsync(1);
    expect(outcome).toBeInstanceOf(StoreTimeoutError);
    expect(events).toMatchObject([{ reason: 'timeout', action: 'deny', key: 'k' }]);
    store.answerAll(); // the late answer settles nothing and throws nothing
    await timers.advanceAsync(0);
    expect(events).toHaveLength(1);
  });
});

describe('the limiter timeout: units charged after a consume timed out', () => {
  const algorithm = tokenBucket({ capacity: 4, refillRate: 1, interval: '1h' });
  const cases: {
    name: string;
    options: Partial<LimiterOptions>;
    used: number;
    served: boolean;
    calls: string[];
    remaining: number;
  }[] = [
    {
      name: "answered denied ('deny'), admitted late: given back",
      options: {},
      used: 0,
      served: false,
      calls: ['charge k', 'giveBack k'],
      remaining: 4,
    },
    {
      name: "answered admitted ('allow'), admitted late: kept (the request was served)",
      options: { onStoreError: 'allow' },
      used: 0,
      served: true,
      calls: ['charge k'],
      remaining: 2,
    },
    {
      name: "answered denied ('deny'), denied late: nothing to give back",
      options: {},
      used: 3,
      served: false,
      calls: ['charge k', 'charge k'],
      remaining: 1,
    },
  ];

  it.each(cases)('$name', async ({ options, used, served, calls, remaining }) => {
    const { store, timers, limiter } = slowStoreLimiter(algorithm, options);
    if (used > 0) {
      const before = limiter.consume('k', used);
      store.answerAll();
      await before;
    }
    const timedOut = limiter.consume('k', 2);
    await timers.advanceAsync(20);
    expect(await timedOut).toMatchObject({ allowed: served, reason: 'timeout' });
    store.answerAll(); // the store answers the consume late
    await timers.advanceAsync(0);
    store.answerAll(); // and the give-back, if one was sent
    await timers.advanceAsync(0);
    expect(store.calls).toEqual(calls);
    expect(store.state.peek('k', algorithm, 0, 0).remaining).toBe(remaining);
  });
});

describe('the limiter timeout: units admitted late for a request that was not served', () => {
  const algorithm = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });

  /** Answers the give-back the late grant caused, and checks that the key's units are all back. */
  async function expectGivenBack(store: TestStore, timers: FakeTimers, key: string): Promise<void> {
    await timers.advanceAsync(0);
    store.answerAll(); // the give-back of the late grant
    await timers.advanceAsync(0);
    expect(store.calls).toEqual([`charge ${key}`, `giveBack ${key}`]);
    expect(store.state.peek(key, algorithm, 0, 0).remaining).toBe(5);
  }

  it('are given back when an asynchronous fallback, still deciding when the grant came, answers the request denied', async () => {
    const fallbackStore = new TestStore({ answers: 'manual' });
    const { store, timers, limiter } = slowStoreLimiter(algorithm, {
      timeout: 50,
      denyCache: false,
      onStoreError: { fallback: { algorithm, store: fallbackStore, timeout: false } },
    });
    const timedOut = limiter.consume('k', 2);
    await timers.advanceAsync(50); // the main store timed out: the fallback is asked, and waits
    expect(fallbackStore.pending).toHaveLength(1);
    store.answerAll(); // the main store admits the consume late, while the fallback decides
    await timers.advanceAsync(0);
    fallbackStore.failAll(); // the fallback fails: the request is answered denied
    expect(await timedOut).toMatchObject({ allowed: false });
    await expectGivenBack(store, timers, 'k');
  });

  it('are given back when the policy admitted the request but another limit then denied it', async () => {
    const failOpen = slowStoreLimiter(algorithm, { timeout: 50, denyCache: false, onStoreError: 'allow', prefix: 'a' });
    const exhausted = createLimiter({
      algorithm: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }),
      store: new TestStore(),
      prefix: 'b',
    });
    exhausted.consumeSync('k');
    const combined = combineLimiters([failOpen.limiter, exhausted]).consume('k', 1);
    await failOpen.timers.advanceAsync(50); // the first limit timed out and failed open; the second denies
    expect(await combined).toMatchObject({ allowed: false, deniedBy: 1 });
    failOpen.store.answerAll(); // the first limit's store admits the consume late
    await expectGivenBack(failOpen.store, failOpen.timers, 'a:k');
  });
});

describe('the limiter timeout: the process', () => {
  /** Node's count of ref'd timers: the ones that keep the process alive. */
  const refTimers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

  it("a call waiting for its deadline keeps no timer that holds the process open (Node's timers)", async () => {
    const store = new TestStore({ answers: 'manual' });
    const limiter = createLimiter({ algorithm: bucket(), store, timeout: '10s' });
    const before = refTimers();
    const pending = limiter.consume('k');
    expect(store.pending).toHaveLength(1);
    expect(refTimers()).toBe(before);
    expect((await store.answered(pending)).reason).toBeUndefined();
  });

  it('the system timers themselves stay ref’d (a held HTTP request is work to finish)', () => {
    const before = refTimers();
    const handle = systemTimers.setTimeout(() => undefined, 10_000);
    expect(refTimers()).toBe(before + 1);
    systemTimers.clearTimeout(handle);
    expect(refTimers()).toBe(before);
  });
});
