import { describe, expect, it } from 'vitest';
import { passWaiters } from './gate-pass.js';
import { PacingBook, type Admission, type PacingTicket } from './pacing-book.js';

const ticketOf = (a: Admission): PacingTicket => {
  if (!a.go) throw new Error(`held until ${a.until}`);
  return a.ticket;
};

/** A book that was told partition `p` of scope `a` has `remaining` left until `resetMs` (at time 0). */
function bookWith(remaining: number, resetMs: number): PacingBook {
  const book = new PacingBook();
  book.answer(ticketOf(book.admit('a', 'GET /', 0)), [{ partition: 'p', remaining, resetMs }], 0);
  return book;
}

const waiters = (...deadlines: number[]) =>
  deadlines.map((deadline, i) => ({ name: `w${i}`, route: 'GET /', deadline }));

describe('passWaiters: one look at a scope’s queue', () => {
  it('lets on, in order, as many as the partition has units left; the rest wait for its reset', () => {
    const queue = waiters(30_000, 30_000, 30_000);
    const { passed, wakeAt } = passWaiters(bookWith(2, 1000), 'a', queue, 10);
    expect(passed.map((p) => p.waiter.name)).toEqual(['w0', 'w1']);
    expect(queue.map((w) => w.name)).toEqual(['w2']);
    expect(wakeAt).toBe(1000);
  });

  it('after the reset, one probe goes and the others wait for its answer (no known time: their deadlines)', () => {
    const book = bookWith(0, 1000);
    const queue = waiters(5000, 4000);
    const { passed, wakeAt } = passWaiters(book, 'a', queue, 1000);
    expect(passed.map((p) => [p.waiter.name, p.ticket.probes])).toEqual([['w0', ['p']]]);
    expect(wakeAt).toBe(4000);
  });

  it('a waiter past its deadline goes anyway, even behind a held one; the held one keeps its place', () => {
    const queue = waiters(30_000, 50);
    const { passed, wakeAt } = passWaiters(bookWith(0, 1000), 'a', queue, 50);
    expect(passed.map((p) => p.waiter.name)).toEqual(['w1']);
    expect(queue.map((w) => w.name)).toEqual(['w0']);
    expect(wakeAt).toBe(1000);
  });

  it('an empty queue, or a scope the book knows nothing of: all go, nothing to wake for', () => {
    expect(passWaiters(new PacingBook(), 'a', [], 0)).toEqual({ passed: [], wakeAt: Infinity });
    const queue = waiters(10, 20);
    expect(passWaiters(new PacingBook(), 'a', queue, 0).passed).toHaveLength(2);
    expect(queue).toEqual([]);
  });

  it("a held waiter holds the later ones of its route only: another route's goes", () => {
    const queue = [...waiters(30_000), { name: 'other', route: 'GET /other', deadline: 30_000 }];
    const { passed, wakeAt } = passWaiters(bookWith(0, 1000), 'a', queue, 10);
    expect(passed.map((p) => p.waiter.name)).toEqual(['other']);
    expect(wakeAt).toBe(1000);
  });
});
