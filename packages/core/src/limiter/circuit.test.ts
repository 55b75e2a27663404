/**
 * The store-down circuit: a table of events on a fake clock (the state machine alone), then the
 * limiter's use of it with a remote store that the test answers or fails by hand.
 */
import { describe, expect, it } from 'vitest';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { StoreError } from '../errors.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import type { TestStore } from '../testing/test-store.js';
import { testStoreLimiter } from '../testing/test-store-limiter.js';
import type { ChargeAnswer } from './charge-path.js';
import { coreOf } from './core-registry.js';
import { CALL_STORE, Circuit, PROBE_STORE, SKIP_STORE } from './circuit.js';
import type { Limiter } from './limiter.js';

/** At `time`: ask the gate (expecting call, probe or skip), or report a failure / a probe's success (expecting the circuit closed or open after it). */
type Step =
  | [time: number, event: 'gate', expected: 'call' | 'probe' | 'skip']
  | [time: number, event: 'fail' | 'probe-ok', expected: 'closed' | 'open'];

const GATES = { [CALL_STORE]: 'call', [PROBE_STORE]: 'probe', [SKIP_STORE]: 'skip' } as const;

const cases: { name: string; threshold: number; intervalMs: number; steps: Step[] }[] = [
  {
    name: 'closed: every call goes to the store, failures below the threshold change nothing',
    threshold: 3,
    intervalMs: 100,
    steps: [
      [0, 'gate', 'call'],
      [0, 'fail', 'closed'],
      [10, 'fail', 'closed'],
      [20, 'gate', 'call'],
    ],
  },
  {
    name: 'opens at the threshold within the interval; one probe after it; its success closes',
    threshold: 3,
    intervalMs: 100,
    steps: [
      [0, 'fail', 'closed'],
      [50, 'fail', 'closed'],
      [100, 'fail', 'open'],
      [150, 'gate', 'skip'],
      [199, 'gate', 'skip'],
      [200, 'gate', 'probe'],
      [200, 'gate', 'skip'],
      [250, 'probe-ok', 'closed'],
      [250, 'gate', 'call'],
    ],
  },
  {
    name: 'failures spread wider than the interval do not open it',
    threshold: 3,
    intervalMs: 100,
    steps: [
      [0, 'fail', 'closed'],
      [60, 'fail', 'closed'],
      [170, 'fail', 'closed'],
      [210, 'fail', 'closed'],
      [220, 'fail', 'open'],
    ],
  },
  {
    name: 'a failed probe keeps it open for another interval from the failure',
    threshold: 1,
    intervalMs: 50,
    steps: [
      [0, 'fail', 'open'],
      [49, 'gate', 'skip'],
      [50, 'gate', 'probe'],
      [60, 'fail', 'open'],
      [109, 'gate', 'skip'],
      [110, 'gate', 'probe'],
    ],
  },
  {
    name: 'a probe that never answers is replaced by another one interval later',
    threshold: 1,
    intervalMs: 50,
    steps: [
      [0, 'fail', 'open'],
      [50, 'gate', 'probe'],
      [99, 'gate', 'skip'],
      [100, 'gate', 'probe'],
    ],
  },
  {
    name: 'a clock stepped back past the opening probes at once, not after the step',
    threshold: 1,
    intervalMs: 100,
    steps: [
      [3_600_000, 'fail', 'open'],
      [3_600_050, 'gate', 'skip'],
      [1_000, 'gate', 'probe'],
      [1_050, 'gate', 'skip'],
    ],
  },
  {
    name: 'closing forgets the failures before it',
    threshold: 2,
    intervalMs: 100,
    steps: [
      [0, 'fail', 'closed'],
      [10, 'fail', 'open'],
      [110, 'gate', 'probe'],
      [110, 'probe-ok', 'closed'],
      [120, 'fail', 'closed'],
      [130, 'fail', 'open'],
    ],
  },
];

/** A consume of `key` that reaches the store (the call after its first `calls`) and is decided by its answer. */
async function reachesStore(store: TestStore, limiter: Limiter, key: string, calls: number): Promise<void> {
  const pending = limiter.consume(key);
  expect(store.calls.length).toBe(calls + 1);
  expect((await store.answered(pending)).reason).toBeUndefined();
}

describe('Circuit', () => {
  it.each(cases)('$name', ({ threshold, intervalMs, steps }) => {
    let now = 0;
    const circuit = new Circuit(() => now, intervalMs, threshold);
    steps.forEach(([time, event, expected], i) => {
      now = time;
      const where = `step ${i} (${event} at ${time})`;
      if (event === 'gate') expect(GATES[circuit.gate()], where).toBe(expected);
      else {
        if (event === 'fail') circuit.failed('store-error');
        else circuit.probeSucceeded();
        expect(circuit.isClosed ? 'closed' : 'open', where).toBe(expected);
      }
    });
  });

  it('repeats the reason of the failure that opened it (or kept it open)', () => {
    let now = 0;
    const circuit = new Circuit(() => now, 100, 2);
    circuit.failed('store-error');
    circuit.failed('timeout');
    expect([circuit.isClosed, circuit.reason]).toEqual([false, 'timeout']);
    now = 100;
    expect(circuit.gate()).toBe(PROBE_STORE);
    circuit.failed('store-error');
    expect(circuit.reason).toBe('store-error');
  });
});

const bucket = () => tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' });

describe('the limiter behind its circuit', () => {
  it('while the circuit is open, decisions repeat the opening reason without a call; then one probe at a time', async () => {
    const timers = new FakeTimers();
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: 20, timers, storeRetryInterval: 100, storeFailureThreshold: 1 },
      start: 1_000,
    });
    const first = limiter.consume('k');
    await timers.advanceAsync(20);
    expect((await first).reason).toBe('timeout');
    store.pending.splice(0);
    const callsAfterFailure = store.calls.length;
    const skipped = await Promise.all([limiter.consume('k'), limiter.peek('k')]);
    expect(skipped.map((d) => d.reason)).toEqual(['timeout', 'timeout']);
    expect(store.calls.length).toBe(callsAfterFailure);

    clock.now += 100; // the retry time has come: one probe goes, the others keep the policy
    const probe = limiter.consume('k');
    const others = await Promise.all([limiter.consume('k'), limiter.consume('k')]);
    expect(store.calls.length).toBe(callsAfterFailure + 1);
    expect(others.map((d) => d.reason)).toEqual(['timeout', 'timeout']);
    expect((await store.answered(probe)).reason).toBeUndefined();

    // The probe succeeded: the circuit is closed, every call goes to the store again.
    await reachesStore(store, limiter, 'k', callsAfterFailure + 1);
  });

  it('the circuit opens only when storeFailureThreshold calls failed within storeRetryInterval', async () => {
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeRetryInterval: 100 },
    });
    for (const t of [0, 60, 170]) {
      clock.now = t;
      const failing = limiter.consume('k');
      store.failAll();
      expect((await failing).reason).toBe('store-error');
    }
    // Three failures, but never three within 100 ms: every call still goes to the store.
    clock.now = 200;
    const answered = limiter.consume('k');
    expect(store.pending).toHaveLength(1);
    expect((await store.answered(answered)).reason).toBeUndefined();
    clock.now = 210;
    const third = limiter.consume('k');
    store.failAll();
    await third; // failures at 60, 170, 210: not three within 100 ms
    const calls = store.calls.length;
    clock.now = 220;
    const fourth = limiter.consume('k');
    store.failAll();
    await fourth; // 170, 210, 220: three within 100 ms: the circuit opens
    clock.now = 230;
    expect((await limiter.consume('k')).reason).toBe('store-error');
    expect(store.calls.length).toBe(calls + 1);
  });

  it('a failed probe keeps the circuit open for another interval (reason store-error)', async () => {
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeRetryInterval: 50, storeFailureThreshold: 1 },
    });
    const first = limiter.consume('k');
    store.failAll();
    expect((await first).reason).toBe('store-error');
    clock.now = 50;
    const probe = limiter.consume('k');
    store.failAll();
    expect((await probe).reason).toBe('store-error');
    const calls = store.calls.length;
    clock.now = 99;
    expect((await limiter.consume('k')).reason).toBe('store-error');
    expect(store.calls.length).toBe(calls);
  });
});

describe("a failure of one key's state (StoreError.keyOnly) is not the store's", () => {
  const keyOnly = (): StoreError =>
    new StoreError('WRONGTYPE Operation against a key holding the wrong kind of value', { keyOnly: true });

  it('never opens the circuit, however many: the policy decides each call, and the other keys go to the store', async () => {
    const { store, limiter } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeFailureThreshold: 2 },
    });
    const errors: unknown[] = [];
    limiter.on('storeError', (event: { error: unknown }) => errors.push(event.error));
    for (let i = 0; i < 5; i++) {
      const bad = limiter.consume('bad');
      store.failAll(keyOnly());
      expect((await bad).reason).toBe('store-error');
    }
    expect(errors).toHaveLength(5);
    await reachesStore(store, limiter, 'good', store.calls.length);
  });

  it('a probe that meets one found the store answering: the circuit closes', async () => {
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeFailureThreshold: 1, storeRetryInterval: 50 },
    });
    const down = limiter.consume('good');
    store.failAll();
    expect((await down).reason).toBe('store-error'); // open
    clock.now = 50;
    const probe = limiter.consume('bad');
    store.failAll(keyOnly());
    expect((await probe).reason).toBe('store-error');
    const next = limiter.consume('good');
    expect(store.pending).toHaveLength(1); // closed: the call went to the store
    expect((await store.answered(next)).reason).toBeUndefined();
  });
});

describe('the limiter behind its open circuit, in a loop', () => {
  it('a loop of awaited decisions on a remote store still lets I/O run: each decision taken without the store waits for a macrotask', async () => {
    const { store, limiter } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeFailureThreshold: 1, storeRetryInterval: '1h' },
    });
    const failing = limiter.consume('k');
    store.failAll();
    expect((await failing).reason).toBe('store-error'); // the circuit is open now
    let iterations = 0;
    let ranAfter: number | undefined;
    setImmediate(() => (ranAfter = iterations));
    while (iterations < 100 && ranAfter === undefined) {
      expect((await limiter.consume('k')).reason).toBe('store-error');
      iterations++;
    }
    // The callback queued before the loop ran before the loop's first decision was answered.
    expect(ranAfter).toBe(0);
    expect(store.calls.length).toBe(1);
  });

  it('a local store’s decisions stay synchronous while its circuit is open', () => {
    const { store, limiter } = testStoreLimiter({
      limiter: { algorithm: bucket(), storeFailureThreshold: 1, storeRetryInterval: '1h' },
      store: { answers: 'sync' },
    });
    store.failure = new StoreError('disk on fire');
    expect(limiter.consumeSync('k').reason).toBe('store-error');
    const core = coreOf(limiter)!;
    const skipped = core.charge(core.chargeOf('k', 1, limiter.algorithm!));
    expect(skipped).not.toBeInstanceOf(Promise);
    expect((skipped as ChargeAnswer).decision).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(store.calls).toEqual(['charge k']);
  });
});

describe("a failure the store outlived is the key's own (issue 25: a Cluster slot migrating)", () => {
  it('calls that fail while later calls of the domain are answered open no circuit: only they get the policy', async () => {
    const roomy = tokenBucket({ capacity: 100, refillRate: 1, interval: '1h' });
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: roomy, timeout: false, storeFailureThreshold: 2, storeRetryInterval: 1000 },
    });
    for (let round = 0; round < 5; round++) {
      // The moving key's calls, sent first, fail; a bystander sent after them is answered first.
      clock.now += 1;
      const moving = [limiter.consume('moving'), limiter.consume('moving'), limiter.consume('moving')];
      clock.now += 1;
      const bystander = limiter.consume('bystander');
      store.answerWhere((key) => key === 'bystander');
      expect((await bystander).reason).toBeUndefined();
      store.failAll();
      expect((await Promise.all(moving)).map((d) => d.reason)).toEqual(['store-error', 'store-error', 'store-error']);
    }
    // The circuit stayed closed: the next bystander goes to the store.
    clock.now += 1;
    await reachesStore(store, limiter, 'bystander', store.calls.length);
  });

  it('a store that answers nothing any more still opens the circuit', async () => {
    const { store, limiter, clock } = testStoreLimiter({
      limiter: { algorithm: bucket(), timeout: false, storeFailureThreshold: 2, storeRetryInterval: 1000 },
    });
    const fine = limiter.consume('k');
    expect((await store.answered(fine)).reason).toBeUndefined();
    clock.now += 1;
    const failing = [limiter.consume('k'), limiter.consume('other')];
    store.failAll();
    await Promise.all(failing);
    const calls = store.calls.length;
    expect((await limiter.consume('k')).reason).toBe('store-error');
    expect(store.calls.length).toBe(calls);
  });
});
