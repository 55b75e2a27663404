import type { LatencyWindow } from './controller.js';

/**
 * The measurements of one window of an adaptive limit: the latencies of the work that succeeded, the
 * failures, the most permits held when that work started and how many it ran at on average. Reused
 * from window to window.
 */
export class LatencyWindowBuilder {
  private latencies: number[] = [];
  private failures = 0;
  private peak = 0;
  /** The permit-ms held while the measured work ran (summed over its latencies). */
  private heldMs = 0;
  /** When the window started (timers' ms). */
  startedAt: number;

  constructor(now: number) {
    this.startedAt = now;
  }

  /**
   * Work that succeeded after `latencyMs` (0 or more), started with `inFlight` permits held (itself
   * included), while `heldMs` permit-ms were held (permits held × time, summed over its latency).
   */
  sample(latencyMs: number, inFlight: number, heldMs: number): void {
    this.latencies.push(latencyMs);
    if (inFlight > this.peak) this.peak = inFlight;
    this.heldMs += heldMs;
  }

  /** Work that failed, started with `inFlight` permits held. */
  fail(inFlight: number): void {
    this.failures++;
    if (inFlight > this.peak) this.peak = inFlight;
  }

  /** True when the window has something to judge a limit by. */
  get measured(): boolean {
    return this.latencies.length > 0 || this.failures > 0;
  }

  /** The window as a controller reads it, for `limit`, `minLatencyMs` and the permits held now. */
  close(limit: number, minLatencyMs: number, inFlight: number): LatencyWindow {
    let latencySumMs = 0;
    for (const latency of this.latencies) latencySumMs += latency;
    const ran = latencySumMs > 0 ? this.heldMs / latencySumMs : undefined;
    return {
      limit,
      minLatencyMs,
      latencyMs: this.latencies.length === 0 ? undefined : median(this.latencies),
      samples: this.latencies.length,
      failures: this.failures,
      peakInFlight: this.peak,
      concurrency: ran === undefined ? undefined : { ran, now: inFlight },
    };
  }

  /** Starts the next window at `now`. */
  restart(now: number): void {
    this.latencies = [];
    this.failures = 0;
    this.peak = 0;
    this.heldMs = 0;
    this.startedAt = now;
  }
}

/** The median of `values` (not empty); sorts them in place. */
export function median(values: number[]): number {
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 === 1 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
}
