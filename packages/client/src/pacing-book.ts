import type { PartitionReport } from './ratelimit-fields.js';

/** What the caller knows of one partition of a scope: the last report, less what is in flight since. */
interface Partition {
  /** Units the client may still send before the reset, by its own count since the last report. */
  remaining: number;
  /** When the quota is back, in the timers' milliseconds. */
  resetAt: number;
  /** Requests admitted to this partition and not answered yet. */
  inFlight: number;
  /** A request sent after the reset is out to learn the new state: the others wait for its answer. */
  probing: boolean;
}

/** What one admitted request holds until its answer: the partitions it was counted against. */
export interface PacingTicket {
  readonly scope: string;
  readonly partitions: readonly string[];
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
 * per window. A request of a scope is counted against every partition the scope's responses reported
 * (the fields do not say which routes share a partition). A partition past its reset that a response
 * of its scope no longer reports is forgotten.
 */
export class PacingBook {
  private readonly scopes = new Map<string, Map<string, Partition>>();

  /** Whether a request of `scope` may go at `now`; `force` admits it anyway (a wait past its bound). */
  admit(scope: string, now: number, force = false): Admission {
    const partitions = this.scopes.get(scope);
    if (partitions === undefined) return { go: true, ticket: { scope, partitions: [], probes: [] } };
    let blocked: { until: number | undefined; partition: string } | undefined;
    for (const [name, p] of partitions) {
      if (p.remaining > 0 || (now >= p.resetAt && !p.probing)) continue;
      const until = now >= p.resetAt ? undefined : p.resetAt;
      if (blocked === undefined || (until !== undefined && (blocked.until === undefined || until > blocked.until)))
        blocked = { until, partition: name };
    }
    if (blocked !== undefined && !force) return { go: false, ...blocked };
    const probes: string[] = [];
    for (const [name, p] of partitions) {
      p.inFlight++;
      if (p.remaining > 0) p.remaining--;
      else if (now >= p.resetAt && !p.probing) {
        p.probing = true;
        probes.push(name);
      }
    }
    return { go: true, ticket: { scope, partitions: [...partitions.keys()], probes } };
  }

  /**
   * When the partition that holds `scope`'s requests the longest lets them on; undefined when none
   * holds them until a known time.
   */
  blockedUntil(scope: string, now: number): number | undefined {
    let until: number | undefined;
    for (const p of this.scopes.get(scope)?.values() ?? []) {
      if (p.remaining === 0 && now < p.resetAt) until = Math.max(until ?? 0, p.resetAt);
    }
    return until;
  }

  /**
   * The answer to an admitted request: its response's reports (none for a network error), at `now`.
   * Each report replaces what was known of its partition, less the requests still in flight to it.
   */
  answer(ticket: PacingTicket, reports: readonly PartitionReport[], now: number): void {
    let partitions = this.scopes.get(ticket.scope);
    for (const name of ticket.partitions) {
      const p = partitions?.get(name);
      if (p === undefined) continue;
      p.inFlight = Math.max(0, p.inFlight - 1);
      if (ticket.probes.includes(name)) p.probing = false;
    }
    const reported = new Set<string>();
    for (const r of reports) {
      if (partitions === undefined) this.scopes.set(ticket.scope, (partitions = new Map()));
      reported.add(r.partition);
      const p = partitions.get(r.partition) ?? { remaining: 0, resetAt: now, inFlight: 0, probing: false };
      p.remaining = Math.max(0, r.remaining - p.inFlight);
      p.resetAt = now + (r.resetMs ?? 0);
      partitions.set(r.partition, p);
    }
    if (partitions === undefined) return;
    for (const [name, p] of partitions) {
      if (!reported.has(name) && now >= p.resetAt && !p.probing) partitions.delete(name);
    }
    if (partitions.size === 0) this.scopes.delete(ticket.scope);
  }
}
