import type { PartitionReport } from './ratelimit-fields.js';

/** The most partitions one scope keeps: a report of one more, when none is done with, is not kept. */
export const MAX_PARTITIONS = 32;
/** The most routes a partition remembers reporting it: past them, it holds every route of its scope. */
export const MAX_ROUTES = 64;
/** The most scopes a book keeps; past them, those with nothing in flight are forgotten, oldest first. */
export const MAX_SCOPES = 10_000;
/** A book looks for scopes it is done with once it holds this many (then again at twice what is left). */
const FIRST_SWEEP = 1_024;

/** What the caller knows of one partition of a scope: the last report, less what is in flight since. */
interface Partition {
  /** Units the client may still send before the reset, by its own count since the last report. */
  remaining: number;
  /** When the quota is back, in the timers' milliseconds. */
  resetAt: number;
  /** Requests counted against it and not answered (those out before its first report included). */
  inFlight: number;
  /** A request sent after the reset is out to learn the new state: the others wait for its answer. */
  probing: boolean;
  /** The routes whose responses reported it (at most {@link MAX_ROUTES}). */
  readonly routes: Set<string>;
  /** No response of its scope that carried fields has left it out: it may be the scope's whole quota. */
  everywhere: boolean;
  /** The scope's admissions before its first report: those of them still out count against it. */
  readonly bornAt: number;
}

/** One scope's partitions, and its requests. */
interface Scope {
  readonly partitions: Map<string, Partition>;
  /** Requests admitted and not answered. */
  inFlight: number;
  /** Requests admitted so far: the next ticket's `seq`. */
  admitted: number;
}

/** What one admitted request holds until its answer: the partitions it was counted against. */
export interface PacingTicket {
  readonly scope: string;
  readonly route: string;
  /** Its place among the scope's admissions. */
  readonly seq: number;
  readonly partitions: readonly string[];
  /** Those it took a unit of (a response that leaves one out gives it back: that partition did not count it). */
  readonly took: readonly string[];
  /** Those it probes: it is the one request sent to learn their state after their reset. */
  readonly probes: readonly string[];
}

/** May a request of a scope go now? If not, until when it waits (undefined: until a probe's answer). */
export type Admission =
  | { readonly go: true; readonly ticket: PacingTicket }
  | { readonly go: false; readonly until: number | undefined; readonly partition: string };

/**
 * The pacing state of every scope (by default an origin) and its partitions, learned from the
 * RateLimit fields of the responses. Pure: time is an argument (the timers' milliseconds), no timer
 * is set here, so that a simulator can drive it on a virtual clock (the timers are `PacingGate`'s).
 *
 * A partition with units left admits a request and counts it; one the server reported empty waits
 * until its reset; after the reset, one request (the probe) goes to learn the new state and the
 * others wait for its answer, so a client that has seen the fields draws at most one 429 per partition
 * per window. Requests already out when a partition is first reported count against it.
 *
 * Which requests a partition counts (the fields do not say which routes share one): a request's
 * `route` (`createFetch`: its method and path) is held by a partition that a response to the same
 * route reported, or that responses to two routes or more reported and no response of the scope has
 * left out (the scope's whole quota: a new route is held by it too). A partition that only other
 * routes reported still counts a request while no response has left it out, but never holds it; the
 * first response that leaves it out gives back the unit it counted and stops it counting other routes.
 * So a limit on one route never holds the others, and an API-wide limit holds a route never seen.
 *
 * Bounded: a scope keeps at most {@link MAX_PARTITIONS} partitions and a book at most
 * {@link MAX_SCOPES} scopes; a partition past its reset that a response no longer reports is
 * forgotten, and so, from time to time, is a scope with nothing in flight and nothing left to wait for.
 */
export class PacingBook {
  private readonly scopes = new Map<string, Scope>();
  private sweepAt = FIRST_SWEEP;

  /** The scopes held: those with requests out or partitions not yet done with (see {@link MAX_SCOPES}). */
  get scopeCount(): number {
    return this.scopes.size;
  }

  /** Whether a request of `scope` to `route` may go at `now`; `force` admits it anyway (a wait past its bound). */
  admit(scope: string, route: string, now: number, force = false): Admission {
    const s = this.scopes.get(scope) ?? this.open(scope, now);
    let blocked: { until: number | undefined; partition: string } | undefined;
    for (const [name, p] of s.partitions) {
      if (!holds(p, route) || p.remaining > 0 || (now >= p.resetAt && !p.probing)) continue;
      const until = now >= p.resetAt ? undefined : p.resetAt;
      if (blocked === undefined || (until !== undefined && (blocked.until === undefined || until > blocked.until)))
        blocked = { until, partition: name };
    }
    if (blocked !== undefined && !force) return { go: false, ...blocked };
    const partitions: string[] = [];
    const took: string[] = [];
    const probes: string[] = [];
    for (const [name, p] of s.partitions) {
      if (!p.everywhere && !holds(p, route)) continue;
      partitions.push(name);
      p.inFlight++;
      if (p.remaining > 0) {
        p.remaining--;
        took.push(name);
      } else if (now >= p.resetAt && !p.probing && holds(p, route)) {
        p.probing = true;
        probes.push(name);
      }
    }
    s.inFlight++;
    return { go: true, ticket: { scope, route, seq: s.admitted++, partitions, took, probes } };
  }

  /**
   * When the partition that holds `scope`'s requests to `route` the longest lets them on; undefined
   * when none holds them until a known time.
   */
  blockedUntil(scope: string, route: string, now: number): number | undefined {
    let until: number | undefined;
    for (const p of this.scopes.get(scope)?.partitions.values() ?? []) {
      if (holds(p, route) && p.remaining === 0 && now < p.resetAt) until = Math.max(until ?? 0, p.resetAt);
    }
    return until;
  }

  /**
   * The answer to an admitted request: its response's reports (none for a network error, or a
   * response without fields), at `now`. Each report replaces what was known of its partition, less
   * the requests still in flight to it; a partition the reports leave out did not count the request.
   */
  answer(ticket: PacingTicket, reports: readonly PartitionReport[], now: number): void {
    const s = this.scopes.get(ticket.scope);
    if (s === undefined) return; // forgotten while the request was out (see MAX_SCOPES)
    s.inFlight = Math.max(0, s.inFlight - 1);
    for (const [name, p] of s.partitions) {
      if (ticket.partitions.includes(name) || ticket.seq < p.bornAt) p.inFlight = Math.max(0, p.inFlight - 1);
      if (ticket.probes.includes(name)) p.probing = false;
    }
    const reported = new Set<string>();
    for (const r of reports) {
      const p = s.partitions.get(r.partition) ?? this.born(s, now);
      if (p === undefined) continue;
      reported.add(r.partition);
      s.partitions.set(r.partition, p);
      if (p.routes.size < MAX_ROUTES) p.routes.add(ticket.route);
      p.remaining = Math.max(0, r.remaining - p.inFlight);
      p.resetAt = now + (r.resetMs ?? 0);
    }
    for (const [name, p] of s.partitions) {
      if (reported.has(name)) continue;
      if (reports.length > 0) {
        p.everywhere = false;
        if (ticket.took.includes(name)) p.remaining++;
      }
      if (done(p, now)) s.partitions.delete(name);
    }
    if (s.partitions.size === 0 && s.inFlight === 0) this.scopes.delete(ticket.scope);
  }

  /** A new partition of `s` (undefined when `s` has {@link MAX_PARTITIONS} it still needs). */
  private born(s: Scope, now: number): Partition | undefined {
    if (s.partitions.size >= MAX_PARTITIONS) {
      for (const [name, p] of s.partitions) if (done(p, now)) s.partitions.delete(name);
      if (s.partitions.size >= MAX_PARTITIONS) return undefined;
    }
    // The scope's other requests still out count against it: the report did not see them.
    return {
      remaining: 0,
      resetAt: now,
      inFlight: s.inFlight,
      probing: false,
      routes: new Set(),
      everywhere: true,
      bornAt: s.admitted,
    };
  }

  /** A new scope (first forgetting, from time to time, those the book is done with: see {@link MAX_SCOPES}). */
  private open(scope: string, now: number): Scope {
    if (this.scopes.size >= this.sweepAt) {
      const keepAtMost = this.scopes.size >= MAX_SCOPES ? (MAX_SCOPES * 3) / 4 : Infinity;
      for (const [name, s] of this.scopes) {
        if (s.inFlight === 0 && [...s.partitions.values()].every((p) => done(p, now))) this.scopes.delete(name);
      }
      // Still at the bound: the oldest with nothing out go, down to three quarters of it, so that the
      // next look comes a quarter of the bound later (each look reads every scope).
      for (const [name, s] of this.scopes) {
        if (this.scopes.size < keepAtMost) break;
        if (s.inFlight === 0) this.scopes.delete(name);
      }
      this.sweepAt = Math.min(MAX_SCOPES, Math.max(FIRST_SWEEP, 2 * this.scopes.size));
    }
    const s: Scope = { partitions: new Map(), inFlight: 0, admitted: 0 };
    this.scopes.set(scope, s);
    return s;
  }
}

/** Whether `p` holds the requests to `route` when it has no unit left (see {@link PacingBook}). */
function holds(p: Partition, route: string): boolean {
  return p.routes.has(route) || p.routes.size >= MAX_ROUTES || (p.everywhere && p.routes.size >= 2);
}

/** Whether `p` has nothing left to tell: past its reset, no probe out, no request counted out. */
function done(p: Partition, now: number): boolean {
  return now >= p.resetAt && !p.probing && p.inFlight === 0;
}
