import { median } from './latency-window.js';

/** Work as a probe sees it: when it started, and how many permits were held then (itself included). */
export interface ProbeWork {
  readonly acquiredAt: number;
  readonly inFlightAtStart: number;
}

/** What a {@link BaselineProbe} starts from. */
export interface ProbeStart {
  /** When it starts (timers' ms). */
  readonly now: number;
  /** The permits during the probe: `min` (the `initial` for the first probe, when nothing is known). */
  readonly atPermits: number;
  /** The limit to go back to when it ends. */
  readonly restoreTo: number;
  /** That limit was filled to half since the probe before: it met a capacity, not a light load. */
  readonly limitFilled: boolean;
  /** The most work it measures (`probeSamples`). */
  readonly samples: number;
  /** The work running when it starts, in acquire order. */
  readonly running: Iterable<ProbeWork>;
}

/**
 * One measurement of the baseline, the backend's unloaded latency (Envoy's `min_rtt_calc`): for one
 * round trip the limit is `atPermits`, and the median latency of the work that ran at that concurrency
 * is the baseline. The work it measures is what started with at most `atPermits` permits held before
 * its first sample came back, at most `samples` pieces: work admitted during the probe, and work
 * already running that started that low (when the backend slows down under running work, that work
 * is the first to tell its new latency: waiting for it to drain and measuring afresh would cost a
 * round trip more). It also counts the work asked for meanwhile, admitted or shed: the load offered.
 */
export class BaselineProbe {
  readonly startedAt: number;
  readonly atPermits: number;
  readonly restoreTo: number;
  readonly limitFilled: boolean;
  private readonly wanted: number;
  /** The work whose latency it waits for. */
  private readonly measured = new Set<ProbeWork>();
  private readonly latencies: number[] = [];
  private asked = 0;
  private mostHeld = 0;

  constructor(start: ProbeStart) {
    this.startedAt = start.now;
    this.atPermits = start.atPermits;
    this.restoreTo = start.restoreTo;
    this.limitFilled = start.limitFilled;
    this.wanted = start.samples;
    for (const work of start.running) if (work.inFlightAtStart <= start.atPermits) this.admitted(work);
  }

  /** Work was asked for, admitted or not. */
  arrived(): void {
    this.asked++;
  }

  /** Work was admitted: measured while no sample has come back yet and fewer than `samples` are. */
  admitted(work: ProbeWork): void {
    if (this.latencies.length === 0 && this.measured.size < this.wanted) this.measured.add(work);
  }

  /** Work succeeded after `latencyMs`; true when the probe has every latency it waits for. */
  succeeded(work: ProbeWork, latencyMs: number): boolean {
    if (!this.measured.has(work)) return false;
    this.latencies.push(latencyMs);
    if (work.inFlightAtStart > this.mostHeld) this.mostHeld = work.inFlightAtStart;
    return this.latencies.length >= this.measured.size;
  }

  /** Work failed or never ran: no latency to wait for; true when the probe has every latency it waits for. */
  abandoned(work: ProbeWork): boolean {
    if (!this.measured.delete(work)) return false;
    return this.latencies.length > 0 && this.latencies.length >= this.measured.size;
  }

  /** The most permits held when a piece of the work whose latency it measured started (0 before one came back). */
  get measuredAt(): number {
    return this.mostHeld;
  }

  /** The median latency measured, in ms; undefined when none came back. */
  baseline(): number | undefined {
    return this.latencies.length === 0 ? undefined : median([...this.latencies]);
  }

  /**
   * The permits the load offered during the probe would hold at `baselineMs` (Little's law: arrivals
   * per ms × latency), from its start to `now`.
   */
  offeredInFlight(baselineMs: number, now: number): number {
    return (this.asked * baselineMs) / Math.max(1, now - this.startedAt);
  }
}
