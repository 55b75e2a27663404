import type { Algorithm } from '../algorithm.js';
import { ceilMs, makeDecision, type Decision } from '../decision.js';

/**
 * The decision of a request while its key is blocked (`leftMs` until the block ends), from the
 * algorithm's own decision for it (taken without recording anything), or of the denial that starts a
 * block (`leftMs` the whole block): denied, nothing `remaining`, `retryAfterMs` the time to the block's
 * end (at least 1 ms), `resetMs` at least that, no delay. Rounded as `decisionFromExact` rounds (the
 * Redis store's twins return the same exact values, see `block-reply.lua`).
 */
export function blockedDecision(decision: Decision, leftMs: number): Decision {
  const left = ceilMs(leftMs);
  return makeDecision(false, decision.limit, 0, Math.max(decision.resetMs, left), Math.max(1, left), 0, decision.policy, decision.at);
}

/**
 * The lockouts of a local store: the time each blocked key's block ends, per state kind (the
 * algorithm's `stateTag`, as the state), on the clock the decisions ran with. At most `maxKeys`
 * blocks: when full, the ended ones are dropped, and then the oldest.
 */
export class BlockTable {
  private readonly ends = new Map<string, number>();

  constructor(private readonly maxKeys = Infinity) {}

  /** Blocks held, live or ended but not yet dropped. */
  get size(): number {
    return this.ends.size;
  }

  /**
   * One decision of `algorithm` (its `blockMs` above 0) for `key` at `now`, with its block: while the
   * key is blocked, the block's denial from `step(false)` (nothing recorded, the block not extended);
   * otherwise `step(commit)`, and a denial of a commit starts a block of `blockMs` from `now`.
   */
  decide(key: string, algorithm: Algorithm, now: number, commit: boolean, step: (commit: boolean) => Decision): Decision {
    const id = `${algorithm.stateTag}\u0000${key}`;
    const end = this.ends.get(id);
    // An ended block is kept until the sweep (or a new denial) replaces it: a clock that goes back into
    // it finds the key blocked, as on Redis (time going back never lifts a lockout early).
    if (end !== undefined && end > now) return blockedDecision(step(false), end - now);
    const decision = step(commit);
    if (!commit || decision.allowed) return decision;
    this.start(id, now + algorithm.blockMs, now);
    return blockedDecision(decision, algorithm.blockMs);
  }

  /** Lifts `key`'s block for this algorithm's state kind (a reset). */
  lift(key: string, algorithm: Algorithm): void {
    this.ends.delete(`${algorithm.stateTag}\u0000${key}`);
  }

  /** Drops the blocks that have ended at `now`; returns how many. */
  sweep(now: number): number {
    let removed = 0;
    for (const [id, end] of this.ends) {
      if (end <= now) {
        this.ends.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /** Drops every block. */
  clear(): void {
    this.ends.clear();
  }

  private start(id: string, end: number, now: number): void {
    const ends = this.ends;
    ends.delete(id);
    if (ends.size >= this.maxKeys && this.sweep(now) === 0) {
      const oldest = ends.keys().next().value;
      if (oldest !== undefined) ends.delete(oldest);
    }
    ends.set(id, end);
  }
}
