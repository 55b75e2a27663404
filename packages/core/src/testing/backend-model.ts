import type { TimerHandle, Timers } from '../timers.js';

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
  private readonly heap: Job[] = [];
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
    return this.heap.length;
  }

  /** Starts one piece of work now; `onDone` hears its latency in ms when it is done. */
  submit(onDone: (latencyMs: number) => void): void {
    const now = this.timers.now();
    this.catchUp(now);
    this.push({ doneAt: this.work + this.serviceMs(now), arrivedAt: now, onDone });
    if (this.heap.length > this.peakInFlight) this.peakInFlight = this.heap.length;
    this.schedule();
  }

  /** Stops its timer (work in flight is dropped). */
  close(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The rate at which each piece of work progresses: 1 up to the capacity, shared past it. */
  private rate(): number {
    return Math.min(1, this.capacity / Math.max(1, this.heap.length));
  }

  private catchUp(now: number): void {
    this.work += (now - this.workAt) * this.rate();
    this.workAt = now;
  }

  private schedule(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    const next = this.heap[0];
    if (next === undefined) return;
    const due = (next.doneAt - this.work) / this.rate();
    this.timer = this.timers.setTimeout(() => this.finish(), Math.max(1, Math.ceil(due - 1e-9)));
  }

  private finish(): void {
    this.timer = undefined;
    const now = this.timers.now();
    this.catchUp(now);
    const done: Job[] = [];
    while (this.heap.length > 0 && this.heap[0]!.doneAt <= this.work + 1e-6) done.push(this.pop());
    this.schedule();
    for (const job of done) job.onDone(now - job.arrivedAt);
  }

  private push(job: Job): void {
    const heap = this.heap;
    heap.push(job);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.doneAt <= heap[i]!.doneAt) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  private pop(): Job {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let least = i;
        if (l < heap.length && heap[l]!.doneAt < heap[least]!.doneAt) least = l;
        if (r < heap.length && heap[r]!.doneAt < heap[least]!.doneAt) least = r;
        if (least === i) break;
        [heap[least], heap[i]] = [heap[i]!, heap[least]!];
        i = least;
      }
    }
    return top;
  }
}
