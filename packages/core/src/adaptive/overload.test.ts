import { describe, expect, test } from 'vitest';
import {
  runOverload,
  type OverloadGate,
  type OverloadRunOptions,
  type OverloadStats,
} from '../simulation/overload-run.js';

// The seed's step: a backend of capacity 100 in flight whose service time goes from 10 ms to 2 s at
// t = 30 s, under 100 requests per second (twice what it completes at 2 s: 50 per second).
/** A service time of `fromMs` that steps to `toMs` at t = 30 s. */
const stepping =
  (fromMs: number, toMs: number) =>
  (t: number): number =>
    t < 30_000 ? fromMs : toMs;
/** `runOverload` through an adaptive limit of min 5, max 1000. */
const throughAdaptive = (options: Omit<OverloadRunOptions, 'gate'>) =>
  runOverload({ ...options, gate: { kind: 'adaptive', options: { min: 5, max: 1000 } } });
const seed = (gate: OverloadGate) =>
  runOverload({ rate: 100, durationMs: 120_000, sliceMs: 1000, capacity: 100, serviceMs: stepping(10, 2000), gate });
const after = (slices: readonly OverloadStats[], from: number) => slices.filter((s) => s.from >= from);
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe("the seed's step (capacity 100 in flight, 10 ms -> 2 s at 30 s, 100 per second)", () => {
  const adaptive = seed({ kind: 'adaptive', options: { min: 5, max: 1000 } });
  const fixed = seed({ kind: 'fixed', permits: 50 });
  const none = seed({ kind: 'none' });

  test('within 6 s of the step the adaptive limit settles at the in-flight that keeps latency at the target (capacity x 1.25), within 10 %', () => {
    const settled = after(adaptive.slices, 36_000);
    for (const s of settled) expect(Math.abs(s.peakInFlight - 125) / 125).toBeLessThanOrEqual(0.1);
  });

  test('p99 latency of admitted work stays within twice the un-overloaded latency (2 s) after the step', () => {
    for (const s of after(adaptive.slices, 30_000)) expect(s.p99Ms ?? 0).toBeLessThanOrEqual(4000);
  });

  test('goodput is at least 0.9 of capacity once settled; a fixed 50 gets half, no limit drowns in latency', () => {
    expect(mean(after(adaptive.slices, 60_000).map((s) => s.goodputRatio))).toBeGreaterThanOrEqual(0.9);
    expect(mean(after(fixed.slices, 60_000).map((s) => s.goodputRatio))).toBeLessThanOrEqual(0.55);
    expect(none.slices.at(-1)!.p99Ms!).toBeGreaterThan(30_000);
  });

  test('before the step the limit stays where it was: 1 in flight is no reason to grow', () => {
    for (const s of adaptive.slices.filter((s) => s.to <= 30_000)) {
      expect(s.permits).toBe(20);
      expect(s.refused).toEqual({});
    }
  });

  test('deterministic: the same run twice is the same report', () => {
    expect(seed({ kind: 'adaptive', options: { min: 5, max: 1000 } })).toEqual(adaptive);
  });
});

describe('another backend: capacity 40 in flight, 50 ms -> 500 ms at 30 s, 160 per second (twice what it completes at 500 ms)', () => {
  const backend = { capacity: 40, serviceMs: stepping(50, 500) };
  const report = throughAdaptive({ rate: 160, durationMs: 60_000, sliceMs: 250, ...backend });

  test('settles at capacity x 1.25 (50 in flight), within 10 %, 4 round trips of the new latency after the step', () => {
    // The probe takes two of them here (no running work started at min: 8 were in flight before the step).
    for (const s of after(report.slices, 32_000)) expect(Math.abs(s.peakInFlight - 50) / 50).toBeLessThanOrEqual(0.1);
  });

  test('p99 within twice the un-overloaded 500 ms through the transient; goodput at least 0.9 of capacity once settled', () => {
    for (const s of after(report.slices, 30_000)) expect(s.p99Ms ?? 0).toBeLessThanOrEqual(1000);
    expect(mean(after(report.slices, 40_000).map((s) => s.goodputRatio))).toBeGreaterThanOrEqual(0.9);
  });
});

describe('a backend slower by less than reprobeAbove (100 ms -> 150 ms at 30 s): measured again, not cut to min', () => {
  const slower = (rate: number, capacity: number) =>
    throughAdaptive({ rate, durationMs: 60_000, sliceMs: 500, capacity, serviceMs: stepping(100, 150) });

  test('over capacity (capacity 100, 800 per second: 120 in flight at 150 ms): settles at capacity x 1.25 within 4 s', () => {
    // Latency 150 is 1.5 x the old baseline at any concurrency: a gradient alone would cut to min and stay there.
    const report = slower(800, 100);
    for (const s of after(report.slices, 34_000)) expect(Math.abs(s.peakInFlight - 125) / 125).toBeLessThanOrEqual(0.1);
    expect(mean(after(report.slices, 40_000).map((s) => s.goodputRatio))).toBeGreaterThanOrEqual(0.9);
  });

  test('under capacity (capacity 10, 53 per second: 8 in flight at 150 ms): everything admitted again', () => {
    for (const s of after(slower(53, 10).slices, 35_000)) expect(s.refused).toEqual({});
  });
});

describe('a backend that gets faster under overload: measured again, not read from a queue (capacity 20, 1000 per second)', () => {
  const faster = (serviceMs: (t: number) => number) =>
    throughAdaptive({ rate: 1000, durationMs: 90_000, sliceMs: 500, capacity: 20, serviceMs });

  // Taken as the baseline, the first faster window's latency (its work queued: 1.25 x the new service) settles
  // the limit at capacity x 1.25^2 with the latency at its target, where no probe runs again: 31 in flight, p50
  // 1.56 x the new service, for good.
  test.each([
    ['100 ms -> 50 ms at 30 s', stepping(100, 50), 31_000],
    [
      '100 ms -> 150 ms at 30 s (measured again) -> 100 ms at 60 s',
      (t: number) => (t < 30_000 || t >= 60_000 ? 100 : 150),
      61_000,
    ],
  ])('%s: settles at capacity x 1.25 (25 in flight), within 10 %, a second after', (_, serviceMs, from) => {
    for (const s of after(faster(serviceMs).slices, from))
      expect(Math.abs(s.peakInFlight - 25) / 25).toBeLessThanOrEqual(0.1);
  });
});

describe('a backend below the default initial limit (capacity 4 at 100 ms, 120 per second: three times what it completes)', () => {
  // The first probe runs at `initial` (20): its work queued at up to 20 in flight (458 ms), a baseline the
  // gradient then held at its target for good (19 in flight, p50 458 ms). Measured again at `min` (1): 100 ms.
  const defaults: OverloadGate = { kind: 'adaptive', options: {} };
  const report = runOverload({
    rate: 120,
    durationMs: 60_000,
    sliceMs: 5000,
    capacity: 4,
    serviceMs: () => 100,
    gate: defaults,
  });

  test('from 10 s: at most capacity x 1.5 in flight, p50 within 1.3 x the service time, goodput at least 0.95', () => {
    for (const s of after(report.slices, 10_000)) {
      expect(s.peakInFlight).toBeLessThanOrEqual(6);
      expect(s.p50Ms ?? 0).toBeLessThanOrEqual(130);
      expect(s.goodputRatio).toBeGreaterThanOrEqual(0.95);
    }
  });
});

describe('priorities at twice the capacity', () => {
  // 100 per second at 2 s against 50 per second of capacity; 3 critical, 3 normal, 4 sheddable in 10.
  const classes = [
    { priority: 'critical', weight: 3 },
    { priority: 'normal', weight: 3 },
    { priority: 'sheddable', weight: 4 },
  ] as const;
  const load = (rate: number | ((t: number) => number), durationMs = 120_000) =>
    throughAdaptive({ rate, durationMs, sliceMs: 10_000, capacity: 100, serviceMs: () => 2000, classes });

  test('critical work is admitted in full once settled, sheddable is shed first', () => {
    for (const s of after(load(100).slices, 30_000)) {
      expect(s.refused.critical ?? 0).toBe(0);
      expect(s.refused.sheddable ?? 0).toBeGreaterThan(s.refused.normal ?? 0);
    }
  });

  test('when the backend gets twice as fast (2 s -> 1 s at 30 s: the load is now its capacity), every class is admitted', () => {
    const faster = stepping(2000, 1000);
    const report = throughAdaptive({
      rate: 100,
      durationMs: 90_000,
      sliceMs: 10_000,
      capacity: 100,
      serviceMs: faster,
      classes,
    });
    for (const s of after(report.slices, 40_000)) expect(s.refused).toEqual({});
  });

  test('when the load drops, no class starves', () => {
    const report = load((t) => (t < 60_000 ? 100 : 20));
    for (const s of after(report.slices, 70_000)) {
      expect(s.refused).toEqual({});
      for (const c of ['critical', 'normal', 'sheddable']) expect(s.admittedPerClass[c]).toBeGreaterThan(0);
    }
  });
});
