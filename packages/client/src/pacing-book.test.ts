import { describe, expect, it } from 'vitest';
import { MAX_PARTITIONS, MAX_SCOPES, PacingBook, type Admission, type PacingTicket } from './pacing-book.js';

const report = (partition: string, remaining: number, resetMs?: number) => ({ partition, remaining, resetMs });
/** The route of most rows: one route, as a client of one endpoint has. */
const R = 'GET /';
const ticketOf = (a: Admission): PacingTicket => {
  if (!a.go) throw new Error(`held until ${a.until}`);
  return a.ticket;
};

describe('PacingBook', () => {
  it('admits a scope it knows nothing of, and counts nothing', () => {
    expect(new PacingBook().admit('a', R, 0)).toEqual({
      go: true,
      ticket: { scope: 'a', route: R, seq: 0, partitions: [], took: [], probes: [] },
    });
  });

  it('counts the units left, less the requests in flight when a report comes back', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', R, 0)), [report('p', 3, 10_000)], 0);
    const tickets = [book.admit('a', R, 1), book.admit('a', R, 2), book.admit('a', R, 3)].map(ticketOf);
    expect(book.admit('a', R, 4)).toEqual({ go: false, until: 10_000, partition: 'p' });
    // The first answer says 2 left, but the two others are still out: none is left to send.
    book.answer(tickets[0]!, [report('p', 2, 9_000)], 5);
    expect(book.admit('a', R, 6)).toMatchObject({ go: false, until: 9_005 });
    expect(book.blockedUntil('a', R, 6)).toBe(9_005);
  });

  it('after the reset, one probe goes; the others wait for its answer, which lets the next ones on', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', R, 0)), [report('p', 0, 1_000)], 0);
    expect(book.admit('a', R, 999)).toMatchObject({ go: false, until: 1_000 });
    const probe = ticketOf(book.admit('a', R, 1_000));
    expect(probe.probes).toEqual(['p']);
    expect(book.admit('a', R, 1_001)).toEqual({ go: false, until: undefined, partition: 'p' });
    book.answer(probe, [report('p', 2, 1_000)], 1_010);
    expect([book.admit('a', R, 1_011).go, book.admit('a', R, 1_012).go, book.admit('a', R, 1_013).go]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('frees the probe when its request fails; forgets a partition past its reset no response reports', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', R, 0)), [report('p', 0, 1_000), report('q', 5, 60_000)], 0);
    const probe = ticketOf(book.admit('a', R, 1_000));
    book.answer(probe, [], 1_005); // a network error: nothing learned, p forgotten (past its reset), q kept
    expect(ticketOf(book.admit('a', R, 1_006)).partitions).toEqual(['q']);
  });

  it('holds until the latest reset among the empty partitions; force admits anyway', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', R, 0)), [report('p', 0, 1_000), report('q', 0, 5_000)], 0);
    expect(book.admit('a', R, 10)).toEqual({ go: false, until: 5_000, partition: 'q' });
    expect(book.admit('a', R, 10, true).go).toBe(true);
    expect(book.admit('b', R, 10).go).toBe(true);
  });

  it('requests already out when a partition is first reported count against it', () => {
    const book = new PacingBook();
    // Five sent at once to a scope the book knows nothing of; the first answer says 4 left.
    const out = [0, 1, 2, 3, 4].map((t) => ticketOf(book.admit('a', R, t)));
    book.answer(out[0]!, [report('p', 4, 10_000)], 5);
    expect(book.admit('a', R, 6)).toMatchObject({ go: false, until: 10_005 }); // the four others use them
    for (const [i, t] of out.slice(1).entries()) book.answer(t, [report('p', 3 - i, 10_000)], 7);
    expect(book.admit('a', R, 8)).toMatchObject({ go: false }); // 0 left, nothing out
  });
});

describe('PacingBook: which routes a partition holds', () => {
  it("a limit that only one route reports never holds another route's requests, nor counts them once a response leaves it out", () => {
    const book = new PacingBook();
    // GET /export is under an API-wide limit and an export limit, now spent.
    book.answer(
      ticketOf(book.admit('a', 'GET /export', 0)),
      [report('api', 99, 60_000), report('exports', 0, 3_600_000)],
      0,
    );
    expect(book.admit('a', 'GET /export', 1)).toMatchObject({ go: false, partition: 'exports' });
    const me = ticketOf(book.admit('a', 'GET /me', 2)); // not held: only /export reported exports
    expect(me.partitions).toEqual(['api', 'exports']);
    book.answer(me, [report('api', 98, 60_000)], 3); // /me's response leaves exports out
    for (let t = 4; t < 10; t++) {
      const next = ticketOf(book.admit('a', 'GET /me', t));
      expect(next.partitions).toEqual(['api']);
      book.answer(next, [report('api', 100 - t, 60_000)], t);
    }
    expect(book.admit('a', 'GET /export', 10)).toMatchObject({ go: false, partition: 'exports' });
  });

  it('a unit counted against a partition the response left out is given back', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', 'GET /x', 0)), [report('x', 2, 60_000)], 0);
    const other = ticketOf(book.admit('a', 'GET /y', 1)); // counted while x may be the scope's whole quota
    expect(other.took).toEqual(['x']);
    book.answer(other, [report('y', 5, 60_000)], 2);
    const [first, second] = [ticketOf(book.admit('a', 'GET /x', 3)), ticketOf(book.admit('a', 'GET /x', 4))];
    expect([first.took, second.took]).toEqual([
      ['x', 'y'],
      ['x', 'y'],
    ]); // both units of x still there (and y, which no response has left out yet, counts them too)
    expect(book.admit('a', 'GET /x', 5)).toMatchObject({ go: false, partition: 'x' });
  });

  it('a partition two routes reported, and no response left out, holds a route never seen', () => {
    const book = new PacingBook();
    book.answer(ticketOf(book.admit('a', 'GET /items/1', 0)), [report('global', 1, 1_000)], 0);
    // One route reported it: a new route is counted, not held.
    book.answer(ticketOf(book.admit('a', 'GET /items/2', 1)), [report('global', 0, 999)], 1);
    expect(book.admit('a', 'GET /items/3', 2)).toEqual({ go: false, until: 1_000, partition: 'global' });
  });

  it('keeps at most MAX_PARTITIONS partitions a scope: a report of one more is not kept', () => {
    const book = new PacingBook();
    const reports = Array.from({ length: MAX_PARTITIONS + 8 }, (_, i) => report(`p${i}`, 5, 60_000));
    book.answer(ticketOf(book.admit('a', R, 0)), reports, 0);
    expect(ticketOf(book.admit('a', R, 1)).partitions).toHaveLength(MAX_PARTITIONS);
  });

  it('forgets scopes it is done with, and keeps at most MAX_SCOPES', () => {
    const book = new PacingBook();
    // Each origin answers once with a quota back after 1 s: done with at 1 s.
    for (let i = 0; i < MAX_SCOPES + 10; i++)
      book.answer(ticketOf(book.admit(`o${i}`, R, 0)), [report('p', 5, 1_000)], 0);
    expect(book.scopeCount).toBeLessThanOrEqual(MAX_SCOPES);
    // Later, past those resets, other origins come: the book, growing again, forgets the ones done with.
    for (let i = 0; i < 3_000; i++)
      book.answer(ticketOf(book.admit(`n${i}`, R, 2_000)), [report('p', 5, 60_000)], 2_000);
    expect(book.scopeCount).toBeLessThan(MAX_SCOPES / 2);
  });
});
