import type { TimerHandle, Timers } from '../timers.js';
import { MinHeap } from './min-heap.js';

/** The options of a {@link BackendModel}. */
export interface BackendModelOptions {
  /** Work the backend serves at full speed at once (its capacity in flight), an integer of at least 1. */
  readonly capacity: number;
  /** The service time in ms of work that arrives at `at` (timers' ms): a constant, or a step (`slow=2s@30s`). */
  readonly serviceMs: (at: number) => number;
  /** The virtual clock (`FakeTimers`). */
  readonly timers: Timers;
}

interface Job {
  /** The backend's work clock at which the job is done. */
  readonly doneAt: number;
  readonly arrivedAt: number;
  readonly onDone: (latencyMs: number) => void;
}

/**
 * A backend as a processor-sharing server (a database, an upstream): up to `capacity` pieces of work
 * each run at full speed; past it they share it, so latency grows in proportion to the work in flight
 * (`service × inFlight / capacity`). The service time of each piece of work is the one at its arrival.
 *
 * All pieces of work in flight progress at one rate, so one work clock (`work`: the service each has
 * received since the start) and a heap of the work clock at which each is done make every event
 * O(log n): a run with thousands in flight (no limit before a slow backend) stays fast.
 */
export class BackendModel {
  private readonly capacity: number;
  private readonly serviceMs: (at: number) => number;
  private readonly timers: Timers;
  /** The work in flight, first done first. */
  private readonly heap = new MinHeap<Job>((a, b) => a.doneAt < b.doneAt);
  private work = 0;
  private workAt: number;
  private timer: TimerHandle | undefined = undefined;
  /** The most pieces of work in flight at once so far. */
  peakInFlight = 0;

  constructor(options: BackendModelOptions) {
    this.capacity = options.capacity;
    this.serviceMs = options.serviceMs;
    this.timers = options.timers;
    this.workAt = this.timers.now();
  }

  /** Pieces of work in flight now. */
  get inFlight(): number {
    return this.heap.size;
  }

  /**
   * Completes now the work done by now, before its timer fires: an arrival at the instant work
   * completes is decided after the completion, as a server frees a slot as the next request comes.
   */
  completeDue(): void {
    const next = this.heap.peek();
    if (next === undefined) return;
    this.catchUp(this.timers.now());
    if (next.doneAt <= this.work + 1e-6) this.finish();
  }

  /** Starts one piece of work now; `onDone` hears its latency in ms when it is done. */
  submit(onDone: (latencyMs: number) => void): void {
    const now = this.timers.now();
    this.catchUp(now);
    this.heap.push({ doneAt: this.work + this.serviceMs(now), arrivedAt: now, onDone });
    if (this.heap.size > this.peakInFlight) this.peakInFlight = this.heap.size;
    this.schedule();
  }

  /** Stops its timer (work in flight is dropped). */
  close(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The rate at which each piece of work progresses: 1 up to the capacity, shared past it. */
  private rate(): number {
    return Math.min(1, this.capacity / Math.max(1, this.heap.size));
  }

  private catchUp(now: number): void {
    this.work += (now - this.workAt) * this.rate();
    this.workAt = now;
  }

  private schedule(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    const next = this.heap.peek();
    if (next === undefined) return;
    const due = (next.doneAt - this.work) / this.rate();
    this.timer = this.timers.setTimeout(() => this.finish(), Math.max(1, Math.ceil(due - 1e-9)));
  }

  /** Completes the work done by now, then arms the timer of the next (`schedule` clears the pending one: from {@link completeDue}, the timer has not fired). */
  private finish(): void {
    const now = this.timers.now();
    this.catchUp(now);
    const done: Job[] = [];
    for (let next = this.heap.peek(); next !== undefined && next.doneAt <= this.work + 1e-6; next = this.heap.peek())
      done.push(this.heap.pop()!);
    this.schedule();
    for (const job of done) job.onDone(now - job.arrivedAt);
  }
}
