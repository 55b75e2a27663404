import { afterIo } from '../runtime.js';
import { StoreTimeoutError } from '../errors.js';
import type { MaybePromise } from '../store/interface.js';
import { unrefTimer, type TimerHandle, type Timers } from '../timers.js';

/** One store call in flight, in the list until it is answered or its deadline passes. */
export interface Deadline {
  readonly at: number;
  /** Called once when the deadline passes unanswered; dropped as soon as the call is answered. */
  onTimeout: ((error: StoreTimeoutError) => void) | undefined;
  prev: Deadline | undefined;
  next: Deadline | undefined;
  /** In the list (not yet answered, not yet due). */
  linked: boolean;
}

/**
 * The timeouts of the store calls in flight. Every call has the same timeout, so deadlines come in
 * order: a FIFO list behind one timer replaces a `setTimeout`/`clearTimeout` pair per call. An
 * answered call leaves the list at once ({@link Deadlines.answered}): under load, keeping each call's
 * entry and callbacks for the whole timeout would move them all to the old generation of the heap,
 * whose collection then costs more than the calls themselves.
 *
 * Time and the timer come from `timers` (`FakeTimers` in tests); the timer never keeps the process
 * alive (see {@link Deadlines.schedule}). A due call times out one I/O phase after its timer fires, so
 * that answers already waiting in a socket win.
 */
export class Deadlines {
  private head: Deadline | undefined;
  private tail: Deadline | undefined;
  private timer: TimerHandle | undefined;

  /** `timeoutMs` > 0: the timeout of every call. */
  constructor(
    readonly timeoutMs: number,
    private readonly timers: Timers,
  ) {}

  /** Deadlines on the same timers whose timeout is at least `floorMs` (this one when it is already). */
  atLeast(floorMs: number): Deadlines {
    return this.timeoutMs >= floorMs ? this : new Deadlines(floorMs, this.timers);
  }

  /** Starts the clock of a call: `onTimeout` runs once if the call is not {@link answered} within the timeout. */
  add(onTimeout: (error: StoreTimeoutError) => void): Deadline {
    const entry: Deadline = {
      at: this.timers.now() + this.timeoutMs,
      onTimeout,
      prev: this.tail,
      next: undefined,
      linked: true,
    };
    if (this.tail === undefined) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
    if (this.timer === undefined) this.schedule(this.timeoutMs);
    return entry;
  }

  /** The call was answered in time: it can no longer time out. Returns false when it already did. */
  answered(entry: Deadline): boolean {
    if (entry.onTimeout === undefined) return false;
    entry.onTimeout = undefined;
    if (entry.linked) this.unlink(entry);
    return true;
  }

  /**
   * `value` against a deadline, in one promise: `onValue` handles the answer, `onError` a rejection or
   * the {@link StoreTimeoutError} of a deadline that passed first (whichever comes first wins). A late
   * answer goes to `onLate` when given (to give back what the store granted after the timeout; what it
   * returns or throws is dropped, a promise's rejection too), and is dropped otherwise; a late rejection
   * is dropped, never unhandled. A handler that throws rejects the result.
   */
  race<T, R>(
    value: Promise<T>,
    onValue: (value: T) => MaybePromise<R>,
    onError: (error: unknown) => MaybePromise<R>,
    onLate?: (value: T) => unknown,
  ): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const settleWith = <V>(handle: (v: V) => MaybePromise<R>, v: V): void => {
        try {
          resolve(handle(v));
        } catch (error) {
          reject(error);
        }
      };
      const entry = this.add((timeout) => settleWith(onError, timeout));
      value.then(
        (v) => {
          if (this.answered(entry)) settleWith(onValue, v);
          else if (onLate !== undefined) lateAnswer(onLate, v);
        },
        (error: unknown) => {
          if (this.answered(entry)) settleWith(onError, error);
        },
      );
    });
  }

  private unlink(entry: Deadline): void {
    entry.linked = false;
    if (entry.prev === undefined) this.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
  }

  /**
   * Arms the one timer. A handle with `unref()` (Node's) is unref'd: a deadline only bounds a call
   * already in flight, and what that call waits for (a socket) keeps the process alive if anything
   * must; a process whose work is done exits at once instead of at the last deadline.
   */
  private schedule(ms: number): void {
    this.timer = unrefTimer(this.timers.setTimeout(this.expire, Math.max(1, Math.ceil(ms))));
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = this.timers.now();
    const due: Deadline[] = [];
    while (this.head !== undefined && this.head.at <= now) {
      const entry = this.head;
      this.unlink(entry);
      due.push(entry);
    }
    if (this.head !== undefined) this.schedule(this.head.at - now);
    // Timers run before I/O in an event-loop turn: after a busy loop, answers may already wait in the
    // socket. Let one I/O phase run first, so only calls still unanswered time out.
    if (due.length > 0) afterIo((d) => this.timeOut(d), due);
  };

  private timeOut(due: Deadline[]): void {
    for (const entry of due) {
      const onTimeout = entry.onTimeout;
      if (onTimeout === undefined) continue;
      entry.onTimeout = undefined;
      onTimeout(new StoreTimeoutError(this.timeoutMs));
    }
  }
}

/** Runs a late-answer handler; whatever it throws or rejects with is dropped (the caller has moved on). */
function lateAnswer<T>(onLate: (value: T) => unknown, value: T): void {
  try {
    const done = onLate(value);
    if (done instanceof Promise) done.catch(ignore);
  } catch {
    // Dropped: see above.
  }
}

function ignore(): void {}
