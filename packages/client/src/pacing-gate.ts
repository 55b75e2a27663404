import type { TimerHandle, Timers } from '@rl/core';
import { passWaiters } from './gate-pass.js';
import type { PacingBook, PacingTicket } from './pacing-book.js';
import type { PartitionReport } from './ratelimit-fields.js';

/** A request let through the gate: its ticket, and how long it was held (0: it went at once). */
export interface Passage {
  readonly ticket: PacingTicket;
  /** Milliseconds on the timers between its arrival and its admission. */
  readonly heldMs: number;
}

/** A request waiting at the gate. */
interface Waiter {
  /** Its route in its scope (see `PacingBook`). */
  readonly route: string;
  /** When it arrived, in the timers' milliseconds. */
  readonly arrived: number;
  /** When it goes whatever the book says (its wait bound), in the timers' milliseconds. */
  readonly deadline: number;
  readonly resolve: (passage: Passage) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/** The one timer of a scope, and when it fires. */
interface ScopeTimer {
  readonly handle: TimerHandle;
  readonly at: number;
}

/**
 * Where requests wait for their turn: a {@link PacingBook} on real (or fake) timers. The requests of a
 * scope wait in arrival order, behind one timer per scope (not one per request), set for the earliest
 * of the reset they wait for and their wait bounds; a probe's answer lets them on at once. A waiter
 * past its bound goes anyway (the server then answers for itself); an aborted one leaves the queue
 * with its signal's reason.
 */
export class PacingGate {
  private readonly queues = new Map<string, Waiter[]>();
  private readonly scopeTimers = new Map<string, ScopeTimer>();

  constructor(
    private readonly book: PacingBook,
    private readonly timers: Timers,
  ) {}

  /** The passage of a request of `scope` to `route` once it may go, waiting at most `maxWaitMs`. */
  enter(scope: string, route: string, maxWaitMs: number, signal: AbortSignal | undefined): Promise<Passage> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const queue = this.queues.get(scope);
    if (queue === undefined) {
      const admission = this.book.admit(scope, route, this.timers.now(), maxWaitMs <= 0);
      if (admission.go) return Promise.resolve({ ticket: admission.ticket, heldMs: 0 });
    }
    return new Promise<Passage>((resolve, reject) => {
      const arrived = this.timers.now();
      const waiter: Waiter = {
        route,
        arrived,
        deadline: arrived + Math.max(0, Math.floor(maxWaitMs)),
        resolve,
        reject,
        signal,
        onAbort: () => {
          const q = this.queues.get(scope);
          const i = q?.indexOf(waiter) ?? -1;
          if (i === -1) return;
          q!.splice(i, 1);
          reject(signal!.reason);
          this.pump(scope);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      if (queue === undefined) this.queues.set(scope, [waiter]);
      else queue.push(waiter);
      this.pump(scope);
    });
  }

  /**
   * The answer to an admitted request (its response's reports; none for a network error): the book
   * learns, the waiters move on.
   */
  answer(ticket: PacingTicket, reports: readonly PartitionReport[]): void {
    this.book.answer(ticket, reports, this.timers.now());
    if (this.queues.has(ticket.scope)) this.pump(ticket.scope);
  }

  /**
   * Lets on, in order, the waiters of `scope` that may go (and any past its bound), and sets the
   * scope's timer for the rest.
   */
  private pump(scope: string): void {
    const queue = this.queues.get(scope);
    if (queue === undefined) return;
    const now = this.timers.now();
    const { passed, wakeAt } = passWaiters(this.book, scope, queue, now);
    for (const { waiter, ticket } of passed) {
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve({ ticket, heldMs: now - waiter.arrived });
    }
    if (queue.length === 0) this.queues.delete(scope);
    this.arm(scope, wakeAt);
  }

  /** The scope's one timer, set for `at` (Infinity: none). */
  private arm(scope: string, at: number): void {
    const current = this.scopeTimers.get(scope);
    if (current?.at === at) return;
    if (current !== undefined) this.timers.clearTimeout(current.handle);
    this.scopeTimers.delete(scope);
    if (at === Infinity) return;
    const handle = this.timers.setTimeout(
      () => {
        this.scopeTimers.delete(scope);
        this.pump(scope);
      },
      Math.max(1, at - this.timers.now()),
    );
    this.scopeTimers.set(scope, { handle, at });
  }
}
