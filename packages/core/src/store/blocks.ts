import type { Algorithm } from '../algorithm.js';
import { ceilMs, makeDecision, type Decision, type DecisionReason } from '../decision.js';

/**
 * The decision of a request while its key is blocked (`leftMs` until the block ends), from the
 * algorithm's own decision for it (taken without recording anything), or of the denial that starts a
 * block (`leftMs` the whole block): denied, nothing `remaining`, `retryAfterMs` the time to the block's
 * end (at least 1 ms), `resetMs` at least that, no delay. Rounded as `decisionFromExact` rounds (the
 * Redis store's twins return the same exact values, see `block-reply.lua`).
 */
export function blockedDecision(decision: Decision, leftMs: number, banned = false): Decision {
  const left = ceilMs(leftMs);
  const blocked = makeDecision({
    allowed: false,
    limit: decision.limit,
    remaining: 0,
    resetMs: Math.max(decision.resetMs, left),
    retryAfterMs: Math.max(1, left),
    delayMs: 0,
    policy: decision.policy,
    at: decision.at,
  });
  return banned ? markBanned(blocked) : blocked;
}

/** Marks a denial as a ban's (`limiter.block`): its reason is `'blocked'`. */
export function markBanned(decision: Decision): Decision {
  (decision as { reason?: DecisionReason }).reason = 'blocked';
  return decision;
}

/** Blocks a new block looks at, when the table is full, for one that has ended before it drops a live one. */
const LOOK_AHEAD = 8;

/**
 * The lockouts of a local store: the time each blocked key's block ends, per state kind (the
 * algorithm's `stateTag`, as the state), on the clock the decisions ran with. At most `maxKeys`
 * blocks: when full, a new block makes room in constant time, dropping an ended block among the next
 * few the table's hand passes (oldest first), else the last of those. The hand is one iterator kept
 * from one new block to the next (as the state tables' eviction: a new one per block would walk again
 * over every entry earlier drops deleted at the start of the Map's table); the sweep drops the ended
 * blocks the hand has not reached.
 */
export class BlockTable {
  private readonly ends = new Map<string, number>();
  /** The blocks of {@link ends} that are bans (`Store.ban`), not lockouts. */
  private readonly bans = new Set<string>();
  /** Where the next look for room starts: an iterator over `ends`, oldest first. */
  private hand: Iterator<[string, number]> | undefined;

  constructor(private readonly maxKeys = Infinity) {}

  /** Blocks held, live or ended but not yet dropped. */
  get size(): number {
    return this.ends.size;
  }

  /**
   * One decision of `algorithm` (its `checksBlocks` true) for `key` at `now`, with its block, as a
   * store takes it: `blocks.denial(key, algorithm, now, step) ?? (commit ? blocks.recorded(key,
   * algorithm, now, step(true)) : step(false))`. While the key is blocked (a lockout or a ban), the
   * block's denial from `step(false)` (nothing recorded, the block not extended); otherwise the step.
   *
   * This one: `decision`, the step's committed decision of `key` at `now`; with a lockout (`blockMs`
   * above 0) a denial starts a block of `blockMs` from `now`, and is answered as the block's.
   */
  recorded(key: string, algorithm: Algorithm, now: number, decision: Decision): Decision {
    if (decision.allowed || algorithm.blockMs === 0) return decision;
    this.start(`${algorithm.stateTag}\u0000${key}`, now + algorithm.blockMs, now);
    return blockedDecision(decision, algorithm.blockMs);
  }

  /**
   * While `key` is blocked at `now` (a lockout or a ban, for this algorithm's state kind), the block's
   * denial, from `step(false)` (the algorithm's decision, taken without recording anything); otherwise
   * undefined. A store reads it before anything else a charge may answer with: an idempotent charge's
   * remembered decision does not outrank a block.
   */
  denial(key: string, algorithm: Algorithm, now: number, step: (commit: false) => Decision): Decision | undefined {
    const id = `${algorithm.stateTag}\u0000${key}`;
    const end = this.ends.get(id);
    // An ended block is kept until the sweep (or a new denial) replaces it: a clock that goes back into
    // it finds the key blocked, as on Redis (time going back never lifts a lockout early).
    return end !== undefined && end > now ? blockedDecision(step(false), end - now, this.bans.has(id)) : undefined;
  }

  /** Bans `key` for this algorithm's state kind until `end` (replacing its block, if any). */
  ban(key: string, algorithm: Algorithm, end: number, now: number): void {
    const id = `${algorithm.stateTag}\u0000${key}`;
    this.start(id, end, now);
    this.bans.add(id);
  }

  /** Lifts `key`'s block for this algorithm's state kind (a reset, an unban). */
  lift(key: string, algorithm: Algorithm): void {
    const id = `${algorithm.stateTag}\u0000${key}`;
    this.ends.delete(id);
    this.bans.delete(id);
  }

  /** Drops the blocks that have ended at `now`; returns how many. */
  sweep(now: number): number {
    let removed = 0;
    for (const [id, end] of this.ends) {
      if (end <= now) {
        this.ends.delete(id);
        this.bans.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /** Drops every block. */
  clear(): void {
    this.ends.clear();
    this.bans.clear();
  }

  private start(id: string, end: number, now: number): void {
    const ends = this.ends;
    ends.delete(id);
    this.bans.delete(id);
    if (ends.size >= this.maxKeys) this.makeRoom(now);
    ends.set(id, end);
  }

  /** Drops one block: an ended one among the next {@link LOOK_AHEAD} the hand passes, else the last of them. */
  private makeRoom(now: number): void {
    let victim: string | undefined;
    for (let looked = 0; looked < LOOK_AHEAD; looked++) {
      let step = this.hand?.next();
      if (step === undefined || step.done === true) {
        this.hand = this.ends.entries();
        step = this.hand.next();
        if (step.done === true) return;
      }
      victim = step.value[0];
      if (step.value[1] <= now) break;
    }
    if (victim !== undefined) {
      this.ends.delete(victim);
      this.bans.delete(victim);
    }
  }
}
