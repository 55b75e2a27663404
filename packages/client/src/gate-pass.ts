import type { PacingBook, PacingTicket } from './pacing-book.js';

/** A request waiting at a pacing gate: its route (see `PacingBook`), and when it goes whatever the book says (its wait bound), in the book's milliseconds. */
export interface GateWaiter {
  readonly route: string;
  readonly deadline: number;
}

/** What one look at a scope's queue lets on, and when to look again. */
export interface GatePass<W extends GateWaiter> {
  /** The waiters let on, in queue order, each with its ticket (they are removed from the queue). */
  readonly passed: readonly { readonly waiter: W; readonly ticket: PacingTicket }[];
  /**
   * When to look again: the earliest of the reset the others wait for and their deadlines; Infinity
   * when none is left (or none waits for a known time).
   */
  readonly wakeAt: number;
}

/**
 * Lets on, in order, the waiters of `scope`'s `queue` that `book` admits at `now`, and any past its
 * deadline (admitted anyway: the server then answers for itself); once one is held, the later ones of
 * its route wait behind it unless past their own deadline (another route's may go: the partition that
 * holds one route may not count the other). The waiters let on are removed from `queue`. Pure: no
 * timer is set (the caller sets one for `wakeAt`), so that `createFetch`'s gate and `rl simulate`'s
 * virtual clock run the same pass.
 */
export function passWaiters<W extends GateWaiter>(
  book: PacingBook,
  scope: string,
  queue: W[],
  now: number,
): GatePass<W> {
  const passed: { waiter: W; ticket: PacingTicket }[] = [];
  const blocked = new Set<string>();
  for (const waiter of [...queue]) {
    const late = now >= waiter.deadline;
    if (blocked.has(waiter.route) && !late) continue;
    const admission = book.admit(scope, waiter.route, now, late);
    if (!admission.go) {
      blocked.add(waiter.route);
      continue;
    }
    queue.splice(queue.indexOf(waiter), 1);
    passed.push({ waiter, ticket: admission.ticket });
  }
  let wakeAt = Infinity;
  for (const w of queue) wakeAt = Math.min(wakeAt, w.deadline);
  for (const route of blocked) wakeAt = Math.min(wakeAt, book.blockedUntil(scope, route, now) ?? Infinity);
  return { passed, wakeAt };
}
