import { AdaptiveConcurrency, type AdaptivePermit } from '../adaptive/adaptive-concurrency.js';
import type { AdaptiveConcurrencyOptions } from '../adaptive/options.js';
import type { Priority } from '../adaptive/priority.js';
import { BackendModel } from './backend-model.js';
import { FakeTimers } from './fake-timers.js';

/** What stands before the backend in an {@link runOverload} run. */
export type OverloadGate =
  | { readonly kind: 'none' }
  | { readonly kind: 'fixed'; readonly permits: number }
  | { readonly kind: 'adaptive'; readonly options: Omit<AdaptiveConcurrencyOptions, 'timers'> };

/** The options of {@link runOverload}. */
export interface OverloadRunOptions {
  /** Arrivals per second (evenly spaced), or a function of the virtual time in ms; or give {@link arrivals}. */
  readonly rate?: number | ((at: number) => number);
  /** The arrivals' times in ms, sorted (a replayed traffic), instead of a {@link rate}. */
  readonly arrivals?: ArrayLike<number>;
  readonly durationMs: number;
  /** The length of a slice of the report, ms (default 5000). */
  readonly sliceMs?: number;
  /** The backend: its capacity in flight and its service time at an instant. */
  readonly capacity: number;
  readonly serviceMs: (at: number) => number;
  readonly gate: OverloadGate;
  /** The classes of arrivals, each with a weight (default: all `normal`); arrivals take them in a fixed rotation. */
  readonly classes?: readonly { readonly priority: Priority; readonly weight: number }[];
}

/** What one gate came to over a span of time. */
export interface OverloadStats {
  readonly from: number;
  readonly to: number;
  readonly admitted: number;
  /** Refused per class label. */
  readonly refused: Readonly<Record<string, number>>;
  /** Admitted per class label. */
  readonly admittedPerClass: Readonly<Record<string, number>>;
  /** The most work in flight at the backend at once. */
  readonly peakInFlight: number;
  /** Latency of the admitted work that completed in the span, ms (undefined when none did). */
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
  /** Work completed per second. */
  readonly goodput: number;
  /** {@link goodput} over what the backend can complete per second (`capacity / service`). */
  readonly goodputRatio: number;
  /** The adaptive limit's permits at the end of the span (the fixed permits; undefined for none). */
  readonly permits: number | undefined;
}

/** The whole run and its slices. */
export interface OverloadReport {
  readonly total: OverloadStats;
  readonly slices: readonly OverloadStats[];
}

interface Gate {
  tryAcquire(priority: Priority): AdaptivePermit | undefined;
  readonly permits: number | undefined;
}

class Span {
  admitted = 0;
  readonly refused: Record<string, number> = {};
  readonly admittedPerClass: Record<string, number> = {};
  /** The most in flight at once: at least what was in flight when the span began. */
  peak: number;
  readonly latencies: number[] = [];
  capacityWork = 0;
  constructor(
    readonly from: number,
    inFlight: number,
  ) {
    this.peak = inFlight;
  }

  stats(to: number, permits: number | undefined): OverloadStats {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const at = (q: number): number | undefined =>
      sorted.length === 0 ? undefined : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
    const seconds = (to - this.from) / 1000;
    return {
      from: this.from,
      to,
      admitted: this.admitted,
      refused: { ...this.refused },
      admittedPerClass: { ...this.admittedPerClass },
      peakInFlight: this.peak,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      goodput: seconds > 0 ? sorted.length / seconds : 0,
      goodputRatio: this.capacityWork > 0 ? sorted.length / this.capacityWork : 0,
      permits,
    };
  }
}

/**
 * Runs arrivals through a gate (no limit, fixed permits, an adaptive limit) into a {@link BackendModel}
 * on a virtual clock, and reports per slice and for the whole run: what was admitted and refused per
 * class, the most in flight at the backend, the latency of the admitted work and the goodput. What
 * `rl simulate --backend` and the adaptive limit's tests run; deterministic.
 */
export function runOverload(options: OverloadRunOptions): OverloadReport {
  const timers = new FakeTimers();
  const sliceMs = options.sliceMs ?? 5000;
  const backend = new BackendModel({ capacity: options.capacity, serviceMs: options.serviceMs, timers });
  const gate = gateOf(options.gate, timers);
  const rotation = classRotation(options.classes ?? [{ priority: 'normal', weight: 1 }]);
  const spans = { total: new Span(0, 0), slice: new Span(0, 0) };
  const slices: OverloadStats[] = [];
  const each = (f: (span: Span) => void): void => {
    f(spans.total);
    f(spans.slice);
  };
  let arrivals = 0;
  const arrive = (): void => {
    backend.completeDue();
    const priority = rotation[arrivals++ % rotation.length]!;
    const label = typeof priority === 'number' ? `share-${priority}` : priority;
    const permit = gate.tryAcquire(priority);
    if (permit === undefined) return each((s) => void (s.refused[label] = (s.refused[label] ?? 0) + 1));
    each((s) => {
      s.admitted++;
      s.admittedPerClass[label] = (s.admittedPerClass[label] ?? 0) + 1;
    });
    backend.submit((latency) => {
      permit.release();
      each((s) => s.latencies.push(latency));
    });
    each((s) => void (s.peak = Math.max(s.peak, backend.inFlight)));
  };
  const given = options.arrivals;
  if (given !== undefined) replay(timers, given, arrive);
  else paced(timers, options.rate ?? 0, arrive);
  for (let at = 0; at < options.durationMs; at += sliceMs) {
    const step = Math.min(sliceMs, options.durationMs - at);
    for (let t = 0; t < step; t += 10) {
      // What the backend could complete in this tick (10 ms, or what is left of the slice), at the service time then.
      const tick = Math.min(10, step - t);
      const can = (options.capacity * tick) / options.serviceMs(timers.now());
      each((s) => void (s.capacityWork += can));
      timers.advance(tick);
    }
    slices.push(spans.slice.stats(at + step, gate.permits));
    spans.slice = new Span(at + step, backend.inFlight);
  }
  backend.close();
  return { total: spans.total.stats(options.durationMs, gate.permits), slices };
}

/** Arrivals at a rate (per second, or a function of the time), evenly spaced, on `timers`. */
function paced(timers: FakeTimers, rate: number | ((at: number) => number), arrive: () => void): void {
  const rateAt = typeof rate === 'number' ? () => rate : rate;
  const next = (): void => {
    const now = rateAt(timers.now());
    timers.setTimeout(
      () => {
        if (now > 0) arrive();
        next();
      },
      now > 0 ? 1000 / now : 100,
    );
  };
  next();
}

/** Arrivals at the given sorted times, one timer at a time (those of one instant together). */
function replay(timers: FakeTimers, times: ArrayLike<number>, arrive: () => void): void {
  let i = 0;
  const next = (): void => {
    // Those due now arrive now: a timer waits 1 ms at least, which moved the arrivals at 0 to 1 ms.
    while (i < times.length && times[i]! <= timers.now()) {
      i++;
      arrive();
    }
    if (i < times.length) timers.setTimeout(next, times[i]! - timers.now());
  };
  next();
}

function gateOf(gate: OverloadGate, timers: FakeTimers): Gate {
  if (gate.kind === 'adaptive') return new AdaptiveConcurrency({ ...gate.options, timers });
  const none: AdaptivePermit = { priority: 'normal', release: () => {} };
  if (gate.kind === 'none') return { tryAcquire: () => none, permits: undefined };
  let held = 0;
  return {
    permits: gate.permits,
    tryAcquire: (priority) => {
      if (held >= gate.permits) return undefined;
      held++;
      let done = false;
      return {
        priority: String(priority),
        release: () => {
          if (!done) held--;
          done = true;
        },
      };
    },
  };
}

/** The classes in a fixed rotation that gives each its weight's share (weights are small integers). */
function classRotation(classes: readonly { readonly priority: Priority; readonly weight: number }[]): Priority[] {
  const rotation: Priority[] = [];
  const most = Math.max(...classes.map((c) => c.weight));
  for (let round = 0; round < most; round++) for (const c of classes) if (round < c.weight) rotation.push(c.priority);
  return rotation;
}
