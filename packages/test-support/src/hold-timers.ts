import type { Timers, TimerHandle } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';

/**
 * {@link FakeTimers} that also tell a test when a callback has been scheduled, so that it can move
 * time on exactly when a request is held: `await timers.scheduled(50)` resolves once a callback due
 * 50 ms after its scheduling exists (the hold of a shaped request), then `await timers.advanceAsync(50)`
 * releases it. Pass it as the `timers` option of a middleware.
 */
export class HoldTimers implements Timers {
  private readonly fake = new FakeTimers();
  /** Delays scheduled and not yet claimed by {@link scheduled}. */
  private readonly unclaimed: number[] = [];
  private readonly waiting: { ms: number; resolve: () => void }[] = [];

  now(): number {
    return this.fake.now();
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const handle = this.fake.setTimeout(callback, ms);
    const waiter = this.waiting.findIndex((w) => w.ms === ms);
    if (waiter === -1) this.unclaimed.push(ms);
    else this.waiting.splice(waiter, 1)[0]!.resolve();
    return handle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.fake.clearTimeout(handle);
  }

  /** Resolves once a callback `ms` milliseconds from its scheduling has been scheduled (each scheduling answers one call). */
  scheduled(ms: number): Promise<void> {
    const i = this.unclaimed.indexOf(ms);
    if (i !== -1) {
      this.unclaimed.splice(i, 1);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ ms, resolve }));
  }

  /** See {@link FakeTimers.advanceAsync}. */
  advanceAsync(ms: number): Promise<void> {
    return this.fake.advanceAsync(ms);
  }
}
