import fc from 'fast-check';
import { describe, expect, it, test } from 'vitest';
import { InvalidOptionError } from '../errors.js';
import type { AdaptiveConcurrencyEvent } from '../observe/observer.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { adaptiveConcurrency, type AdaptivePermit } from './adaptive-concurrency.js';
import type { LatencyWindow } from './controller.js';
import type { AdaptiveConcurrencyOptions } from './options.js';
import type { Priority } from './priority.js';

const make = (options: AdaptiveConcurrencyOptions = {}) => {
  const timers = new FakeTimers(1000);
  return { timers, limit: adaptiveConcurrency({ min: 2, max: 100, initial: 10, timers, ...options }) };
};

/** Runs `n` pieces of work of `ms` each through `limit`, all started now (the last started ends first: the window's first sample saw them all). */
function work(limit: ReturnType<typeof make>['limit'], timers: FakeTimers, n: number, ms: number): void {
  const permits = Array.from({ length: n }, () => limit.tryAcquire('critical')).filter((p) => p !== undefined);
  timers.advance(ms);
  for (const p of permits.reverse()) p.release();
}

describe('adaptiveConcurrency: bad input is a typed error at creation', () => {
  test.each([
    [{ min: 10, max: 5 }, 'adaptiveConcurrency.max'],
    [{ min: 5, max: 10, initial: 20 }, 'adaptiveConcurrency.initial'],
    [{ min: 5, max: 10, initial: 2 }, 'adaptiveConcurrency.initial'],
    [{ min: 0 }, 'adaptiveConcurrency.min'],
    [{ min: -1 }, 'adaptiveConcurrency.min'],
    [{ max: Infinity }, 'adaptiveConcurrency.max'],
    [{ initial: NaN }, 'adaptiveConcurrency.initial'],
    [{ min: 1.5 }, 'adaptiveConcurrency.min'],
    [{ window: -5 }, 'adaptiveConcurrency.window'],
    [{ maxHold: 0 }, 'adaptiveConcurrency.maxHold'],
    [{ probeInterval: 'soon' }, 'adaptiveConcurrency.probeInterval'],
    [{ probeSamples: 0 }, 'adaptiveConcurrency.probeSamples'],
    [{ reprobeAbove: 1 }, 'adaptiveConcurrency.reprobeAbove'],
    [{ shares: { sheddable: 1.5 } }, 'adaptiveConcurrency.shares.sheddable'],
    [{ shares: { normal: 0.4, sheddable: 0.5 } }, 'adaptiveConcurrency.shares.sheddable'],
    [{ controller: {} }, 'adaptiveConcurrency.controller'],
    [{ limit: 5 }, 'adaptiveConcurrency.limit'],
  ])('%j names %s', (options, field) => {
    let thrown: unknown;
    try {
      adaptiveConcurrency(options as AdaptiveConcurrencyOptions);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidOptionError);
    expect((thrown as InvalidOptionError).code).toBe('RL_INVALID_OPTION');
    expect((thrown as InvalidOptionError).field).toBe(field);
  });

  test('a bad priority at a request throws and takes nothing', () => {
    const { limit } = make();
    expect(() => limit.tryAcquire('vip' as never)).toThrow(InvalidOptionError);
    expect(() => limit.tryAcquire(0)).toThrow(InvalidOptionError);
    expect(limit.inFlight).toBe(0);
  });
});

describe('permits', () => {
  test('at most the permits at once; the lowest class reaches its share first', () => {
    const { limit } = make({ shares: { normal: 0.8, sheddable: 0.5 } });
    const held: AdaptivePermit[] = [];
    for (let i = 0; i < 5; i++) held.push(limit.tryAcquire('sheddable')!);
    expect(limit.tryAcquire('sheddable')).toBeUndefined();
    for (let i = 0; i < 3; i++) held.push(limit.tryAcquire('normal')!);
    expect(limit.tryAcquire('normal')).toBeUndefined();
    held.push(limit.tryAcquire('critical')!, limit.tryAcquire(1)!);
    expect(limit.tryAcquire('critical')).toBeUndefined();
    expect(held.every((p) => p !== undefined)).toBe(true);
    const classes = limit.snapshot().classes;
    expect(classes.sheddable).toEqual({ inFlight: 5, admitted: 5, shed: 1, failed: 0 });
    expect(classes['share-1']).toEqual({ inFlight: 1, admitted: 1, shed: 0, failed: 0 });
  });

  test('a permit released twice counts once', () => {
    const { limit } = make();
    const a = limit.tryAcquire()!;
    limit.tryAcquire();
    a.release();
    a.release();
    a.release({ failed: true });
    expect(limit.inFlight).toBe(1);
    expect(limit.snapshot().classes.normal).toEqual({ inFlight: 1, admitted: 2, shed: 0, failed: 0 });
  });

  test('a permit never released is freed at maxHold and counted failed, its later release is nothing', () => {
    const { limit, timers } = make({ maxHold: '5s' });
    const lost = limit.tryAcquire('sheddable')!;
    timers.advance(4999);
    expect(limit.inFlight).toBe(1);
    timers.advance(1);
    expect(limit.inFlight).toBe(0);
    expect(limit.snapshot().classes.sheddable!.failed).toBe(1);
    lost.release();
    expect(limit.inFlight).toBe(0);
    expect(timers.pending).toBe(0);
  });

  test('a clock that steps back gives no latency: no sample, no negative baseline', () => {
    let now = 5000;
    const timers = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const limit = adaptiveConcurrency({ min: 1, max: 10, initial: 2, timers, probeSamples: 1 });
    const heard: AdaptiveConcurrencyEvent[] = [];
    limit.watch('db', (e) => heard.push(e));
    const p = limit.tryAcquire()!;
    now = 1000;
    p.release();
    expect(heard.at(-1)).toMatchObject({ kind: 'released', latencyMs: undefined });
    expect(limit.snapshot().minLatencyMs).toBeUndefined();
    now = 1010;
    limit.tryAcquire()!.release();
    expect(limit.snapshot().minLatencyMs).toBe(0);
  });

  test('a baseline of 0 (work back within the same ms) and a probe after it: the permits stay a number within [min, max]', () => {
    // The probe's end once divided the new baseline by the old (0 / 0): permits NaN, and every request admitted.
    const { limit, timers } = make({ min: 2, max: 30, initial: 8, maxHold: '2s', probeSamples: 3 });
    limit.tryAcquire('critical')!.release();
    expect(limit.snapshot().minLatencyMs).toBe(0);
    limit.tryAcquire('critical');
    timers.advance(100);
    limit.tryAcquire('critical');
    timers.advance(2000);
    expect(limit.permits).toBeGreaterThanOrEqual(2);
    expect(limit.permits).toBeLessThanOrEqual(30);
  });
});

describe('the limit follows the latency', () => {
  // The first probe's work below starts 5 at once: with `min` 5 that is a baseline measured at `min` (work that
  // started at more permits held is measured again at `min`: see 'a first baseline measured above min').
  // Ten round trips after the first work measured a baseline of 10 ms: both latencies are 25 ms at 10 permits
  // (twice the target), and the limit is halved; what the latency does then tells a queue from a slower backend.
  test.each([
    {
      name: 'a queue (capacity 4 at 10 ms): 12.5 ms at 5 permits, the target; the baseline stays',
      latencyMs: (permits: number) => 10 * Math.max(1, permits / 4),
      baseline: 10,
    },
    {
      name: 'a slower backend (25 ms at any concurrency): halved, still 25 ms, so measured again, not cut to min',
      latencyMs: () => 25,
      baseline: 25,
    },
  ])('$name', ({ latencyMs, baseline }) => {
    const { limit, timers } = make({ probeSamples: 5, min: 5 });
    work(limit, timers, 5, 10);
    expect(limit.snapshot()).toMatchObject({ minLatencyMs: 10, probing: false, permits: 10 });
    const permits: number[] = [];
    for (let i = 0; i < 10; i++) {
      work(limit, timers, limit.permits, latencyMs(limit.permits));
      permits.push(limit.permits);
    }
    expect(permits).toEqual([10, 10, 10, 5, 5, 5, 5, 5, 5, 5]);
    expect(limit.snapshot().minLatencyMs).toBe(baseline);
  });

  test('work at the baseline that fills the limit grows it (a slow start: doubling per round trip), up to max', () => {
    const { limit, timers } = make({ probeSamples: 5, min: 5 });
    work(limit, timers, 5, 100);
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      work(limit, timers, limit.permits, 100);
      seen.push(limit.permits);
    }
    expect(seen).toEqual([20, 40, 80, 100, 100]);
  });

  test('failures back the limit off, and a failed piece of work is never a latency sample', () => {
    const { limit, timers } = make({ probeSamples: 5, min: 5 });
    work(limit, timers, 5, 100);
    const permits = Array.from({ length: 10 }, () => limit.tryAcquire('critical')!);
    timers.advance(1);
    for (const p of permits) p.release({ failed: true });
    timers.advance(100);
    limit.tryAcquire()!.release({ failed: true });
    expect(limit.permits).toBe(9);
    expect(limit.snapshot().latencyMs).toBeUndefined();
  });

  test('a backend that slows down under running work: the work that started at min tells its new latency', () => {
    const { limit, timers } = make({ probeSamples: 3 });
    work(limit, timers, 3, 10);
    // The running work's median age passes 3 x the baseline: a probe starts, counting the two pieces
    // that started with at most min (2) in flight; they come back with the new latency, no round trip more.
    work(limit, timers, 10, 100);
    expect(limit.snapshot()).toMatchObject({ probing: false, minLatencyMs: 100, permits: 10 });
  });

  test('a backend whose latency triples under work that started above min is probed at min', () => {
    const { limit, timers } = make({ probeSamples: 3 });
    work(limit, timers, 3, 10);
    const fillers = [limit.tryAcquire('critical')!, limit.tryAcquire('critical')!];
    const running = Array.from({ length: 8 }, () => limit.tryAcquire('critical')!);
    for (const f of fillers) f.release({ cancelled: true });
    timers.advance(100);
    for (const p of running.reverse()) p.release();
    expect(limit.snapshot()).toMatchObject({ probing: true, permits: 2 });
    work(limit, timers, 2, 100);
    expect(limit.snapshot()).toMatchObject({ probing: false, minLatencyMs: 100, permits: 10 });
  });

  test('a first baseline measured above min (work started 5 at once, min 2) is measured again at min', () => {
    const { limit, timers } = make({ probeSamples: 5 });
    // A backend of capacity 2 at 20 ms: the first probe's 5 pieces take 50 ms, a queue read as the baseline.
    const latencyMs = (inFlight: number) => 20 * Math.max(1, inFlight / 2);
    work(limit, timers, 5, latencyMs(5));
    expect(limit.snapshot()).toMatchObject({ minLatencyMs: 50, probing: false, permits: 10 });
    const seen: (number | undefined)[] = [];
    for (let i = 0; i < 4; i++) {
      work(limit, timers, limit.permits, latencyMs(limit.permits));
      seen.push(limit.snapshot().minLatencyMs);
    }
    // The first window's release starts the probe at min; the work admitted at 2 then tells 20 ms.
    expect(seen).toEqual([50, 20, 20, 20]);
  });

  test('a window tells the permits its work ran at on average (permit-ms over its latency) and those held when it closed', () => {
    const windows: LatencyWindow[] = [];
    const controller = { name: 'spy', next: (w: LatencyWindow) => (windows.push(w), w.limit) };
    const { limit, timers } = make({ probeSamples: 1, controller });
    work(limit, timers, 1, 100);
    // Two permits for 50 ms, then four for 50 ms: the first piece of work ran at 3 on average.
    const first = limit.tryAcquire()!;
    limit.tryAcquire();
    timers.advance(50);
    limit.tryAcquire();
    limit.tryAcquire();
    timers.advance(50);
    first.release();
    expect(windows).toHaveLength(1);
    expect(windows[0]).toMatchObject({ latencyMs: 100, samples: 1, peakInFlight: 1, concurrency: { ran: 3, now: 3 } });
  });

  test('watchers hear admissions, sheds, releases and limit changes with the state after each', () => {
    const { limit, timers } = make({ probeSamples: 1, initial: 2, min: 1, shares: { normal: 0.5 } });
    const heard: AdaptiveConcurrencyEvent[] = [];
    const stop = limit.watch('db', (e) => heard.push(e));
    const p = limit.tryAcquire()!;
    limit.tryAcquire();
    timers.advance(7);
    p.release();
    stop();
    limit.tryAcquire();
    expect(heard.map((e) => [e.kind, e.priority, e.inFlight, e.latencyMs])).toEqual([
      ['admitted', 'normal', 1, undefined],
      ['shed', 'normal', 1, undefined],
      ['released', 'normal', 0, 7],
      ['limit', undefined, 0, 7],
    ]);
    expect(heard[3]).toMatchObject({ limit: 'db', minLatencyMs: 7, permits: 2 });
  });
});

describe('invariants over random work (property)', () => {
  const step = fc.oneof(
    fc.record({
      op: fc.constant('acquire' as const),
      priority: fc.constantFrom('critical', 'normal', 'sheddable', 0.7),
    }),
    fc.record({ op: fc.constant('release' as const), which: fc.nat(), failed: fc.boolean(), twice: fc.boolean() }),
    fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 3000 }) }),
  );

  it('permits stay within [min, max]; in flight is what was admitted and not yet ended, and never above the permits at admission', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const timers = new FakeTimers();
        const limit = adaptiveConcurrency({ min: 2, max: 30, initial: 8, maxHold: '2s', probeSamples: 3, timers });
        const held: AdaptivePermit[] = [];
        let admitted = 0;
        for (const s of steps) {
          if (s.op === 'acquire') {
            const before = { inFlight: limit.inFlight, permits: limit.permits };
            const permit = limit.tryAcquire(s.priority as Priority);
            if (permit !== undefined) {
              expect(before.inFlight).toBeLessThan(before.permits);
              admitted++;
              held.push(permit);
            }
          } else if (s.op === 'release' && held.length > 0) {
            const permit = held.splice(s.which % held.length, 1)[0]!;
            permit.release({ failed: s.failed });
            if (s.twice) permit.release();
          } else if (s.op === 'advance') timers.advance(s.ms);
          const { classes, permits, inFlight } = limit.snapshot();
          expect(permits).toBeGreaterThanOrEqual(2);
          expect(permits).toBeLessThanOrEqual(30);
          const counted = Object.values(classes).reduce((sum, c) => sum + c.inFlight, 0);
          expect(counted).toBe(inFlight);
          expect(admitted - inFlight).toBeGreaterThanOrEqual(0);
          expect(inFlight).toBeLessThanOrEqual(held.length);
        }
        limit.close();
      }),
    );
  });
});
