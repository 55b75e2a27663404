import { describe, expect, it } from 'vitest';
import { PacingBook, type Admission, type PacingTicket } from './pacing-book.js';

const report = (partition: string, remaining: number, resetMs?: number) => ({ partition, remaining, resetMs });
const ticketOf = (a: Admission): PacingTicket => {
  if (!a.go) throw new Error(`held until ${a.until}`);
  return a.ticket;
};

describe('PacingBook', () => {
  it('admits a scope it knows nothing of, and counts nothing', () => {
    expect(new PacingBook().admit('a', 0)).toEqual({ go: true, ticket: { scope: 'a', partitions: [], probes: [] } });
  });

  it('counts the units left, less the requests in flight when a report comes back', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', 0)), [report('p', 3, 10_000)], 0);
    const tickets = [book.admit('a', 1), book.admit('a', 2), book.admit('a', 3)].map(ticketOf);
    expect(book.admit('a', 4)).toEqual({ go: false, until: 10_000, partition: 'p' });
    // The first answer says 2 left, but the two others are still out: none is left to send.
    book.answer(tickets[0]!, [report('p', 2, 9_000)], 5);
    expect(book.admit('a', 6)).toMatchObject({ go: false, until: 9_005 });
    expect(book.blockedUntil('a', 6)).toBe(9_005);
  });

  it('after the reset, one probe goes; the others wait for its answer, which lets the next ones on', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', 0)), [report('p', 0, 1_000)], 0);
    expect(book.admit('a', 999)).toMatchObject({ go: false, until: 1_000 });
    const probe = ticketOf(book.admit('a', 1_000));
    expect(probe.probes).toEqual(['p']);
    expect(book.admit('a', 1_001)).toEqual({ go: false, until: undefined, partition: 'p' });
    book.answer(probe, [report('p', 2, 1_000)], 1_010);
    expect([book.admit('a', 1_011).go, book.admit('a', 1_012).go, book.admit('a', 1_013).go]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('frees the probe when its request fails; forgets a partition past its reset no response reports', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', 0)), [report('p', 0, 1_000), report('q', 5, 60_000)], 0);
    const probe = ticketOf(book.admit('a', 1_000));
    book.answer(probe, [], 1_005); // a network error: nothing learned, p forgotten (past its reset), q kept
    expect(ticketOf(book.admit('a', 1_006)).partitions).toEqual(['q']);
  });

  it('holds until the latest reset among the empty partitions; force admits anyway', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', 0)), [report('p', 0, 1_000), report('q', 0, 5_000)], 0);
    expect(book.admit('a', 10)).toEqual({ go: false, until: 5_000, partition: 'q' });
    expect(book.admit('a', 10, true).go).toBe(true);
    expect(book.admit('b', 10).go).toBe(true);
  });
});
