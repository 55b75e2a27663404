import type { TimerHandle, Timers } from '../timers.js';

interface Scheduled {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
}

/**
 * Timers that move only when a test says so: `advance(ms)` runs every callback that falls due, in
 * order of due time (then of scheduling), each at its own time. Pass it as the `timers` option of
 * `createLimiter` or of a middleware to test timeouts, the store-down circuit and holds without
 * waiting.
 *
 * ```ts
 * const timers = new FakeTimers();
 * const limiter = createLimiter({ algorithm, store, timeout: 50, timers });
 * const pending = limiter.consume('k');   // the store never answers
 * await timers.advanceAsync(50);          // the deadline passes: the failure policy decides
 * ```
 */
export class FakeTimers implements Timers {
  private time: number;
  private seq = 0;
  private readonly queue: Scheduled[] = [];

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const entry: Scheduled = { at: this.time + Math.max(1, ms), seq: this.seq++, callback };
    this.queue.push(entry);
    return entry;
  }

  clearTimeout(handle: TimerHandle): void {
    const i = this.queue.indexOf(handle as Scheduled);
    if (i !== -1) this.queue.splice(i, 1);
  }

  /** Callbacks scheduled and not yet run. */
  get pending(): number {
    return this.queue.length;
  }

  /** Moves time on by `ms`, running each callback that falls due at its due time (synchronously). */
  advance(ms: number): void {
    const end = this.time + ms;
    for (let next = this.nextDue(end); next !== undefined; next = this.nextDue(end)) {
      this.queue.splice(this.queue.indexOf(next), 1);
      this.time = next.at;
      next.callback();
    }
    this.time = end;
  }

  /**
   * {@link advance}, letting promises and one I/O phase run after each callback (the limiter times a
   * call out after letting pending I/O answer first): what a test awaits before it looks at results.
   */
  async advanceAsync(ms: number): Promise<void> {
    const end = this.time + ms;
    for (let next = this.nextDue(end); next !== undefined; next = this.nextDue(end)) {
      this.queue.splice(this.queue.indexOf(next), 1);
      this.time = next.at;
      next.callback();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.time = end;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private nextDue(end: number): Scheduled | undefined {
    let best: Scheduled | undefined;
    for (const entry of this.queue) {
      if (
        entry.at <= end &&
        (best === undefined || entry.at < best.at || (entry.at === best.at && entry.seq < best.seq))
      )
        best = entry;
    }
    return best;
  }
}
