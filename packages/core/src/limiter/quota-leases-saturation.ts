import type { Algorithm } from '../algorithm.js';
import { makeDecision, type Decision, type DecisionReason } from '../decision.js';
import { withoutStore, type ChargeAnswer } from './charge-path.js';
import type { LeaseEntry } from './lease-parts.js';

/**
 * A key's quota leases at saturation, when the limiter denies locally (`LeaseParts.deniesLocally`):
 * what the store's answer to a block says about when the next block is there, and the denial a
 * request its blocks cannot serve gets until then, without a store call. One ask per holder per block
 * the store has to give: not one store call per request once blocks run short.
 *
 * - A block denied for want of quota: no block is asked before the store's retry time for it, counted
 *   from its answer (the next ask reaches the store no sooner than the units are there); meanwhile the
 *   key's requests are denied with it. When the units left would lapse by then (a window's rest, see
 *   {@link lapses}), they are asked for at once instead: a block of what is there.
 * - A block granted that left the store short of another (`remaining` below `units`): a window's
 *   rest is the next block; a window with nothing left gives nothing before its end; a bucket gives
 *   the next block once its rate has brought back what a block lacks; a sliding window at saturation
 *   (a block of the key was denied since the store last had a block to spare) about as long after
 *   this one as the store said the last would take ({@link LeaseEntry.pacedMs}, at most a window).
 *   No block is asked before then: the holder whose block was granted would otherwise ask again as
 *   soon as it is spent, and be denied.
 */

/** The store's answer to a block of a key: its decision, the units asked for, and when it came (local clock). */
export interface BlockAnswer {
  readonly decision: Decision;
  readonly asked: number;
  readonly heardAt: number;
}

/** The store denied the entry's block (for want of quota). */
export function blockDenied(entry: LeaseEntry, { decision: d, asked, heardAt }: BlockAnswer): void {
  // The store's own word on what is left (a cached denial's may be stale).
  if (d.reason === undefined && d.remaining >= 1 && lapses(entry.algorithm, d.at, asked)) {
    entry.restAsk = d.remaining;
    return;
  }
  const waitMs = Math.max(1, d.retryAfterMs);
  entry.pacedMs = waitMs;
  entry.noBlockUntil = heardAt + waitMs;
  entry.denial = { heardAt, decision: d };
}

/** The store granted the entry's block, of the lease's blocks of `units`. */
export function blockGranted(entry: LeaseEntry, { decision: d, asked, heardAt }: BlockAnswer, units: number): void {
  const left = d.remaining;
  if (left >= units) {
    // A block to spare: the key is not at saturation.
    entry.pacedMs = 0;
    return;
  }
  // An early ask would find less than a block: the next is asked once a request needs it, or later.
  entry.askAheadBelow = 0;
  const algorithm = entry.algorithm;
  let waitMs: number;
  if (lapses(algorithm, d.at, asked)) {
    if (left >= 1) return void (entry.restAsk = left);
    // Nothing left in the window: nothing before its end.
    waitMs = algorithm.leaseHoldMs(d.at, asked);
  } else if (refills(algorithm, d.at, units)) {
    // A bucket: the time its rate takes to bring back what a block lacks.
    waitMs = algorithm.leaseHoldMs(d.at, units - left);
  } else if (entry.pacedMs > 0) {
    // A sliding window frees what older admissions took as they age out: about as long again as the last denial said.
    waitMs = Math.min(entry.pacedMs, algorithm.leaseHoldMs(d.at, units));
  } else return;
  entry.noBlockUntil = heardAt + waitMs;
  entry.denial = { heardAt, decision: d };
}

/**
 * The denial of a request of the entry's key that its blocks cannot serve at `now` (local), while no
 * block is asked ({@link LeaseEntry.noBlockUntil}): reason `'deny-cache'` (decided from the store's
 * earlier answer), `remaining` 0, the retry time when the next block is asked, the limit, policy and
 * reset of the store's last answer to a block. Undefined when there is none.
 */
export function localDenial(entry: LeaseEntry, now: number): ChargeAnswer | undefined {
  const denial = entry.denial;
  if (denial === undefined || now >= entry.noBlockUntil) return undefined;
  const d = denial.decision;
  const decision = makeDecision({
    allowed: false,
    limit: d.limit,
    remaining: 0,
    resetMs: Math.max(0, Math.ceil(d.resetMs - (now - denial.heardAt))),
    retryAfterMs: Math.max(1, Math.ceil(entry.noBlockUntil - now)),
    delayMs: 0,
    policy: d.policy,
    at: now,
  });
  (decision as { reason?: DecisionReason }).reason = 'deny-cache';
  return withoutStore(decision);
}

/**
 * Whether the quota of `algorithm` comes back at a steady pace (a bucket: `leaseHoldMs` of a block is
 * the time its rate takes to bring it back, longer for a larger one).
 */
export function refills(algorithm: Algorithm, at: number, units: number): boolean {
  return algorithm.leaseHoldMs(at, 2 * units) !== algorithm.leaseHoldMs(at, units);
}

/**
 * Whether the quota of `algorithm` comes back all at once, at the end of a block of `units` taken at
 * `at` (a window's end: `leaseHoldMs` is shorter for a block taken later), so that units left unused
 * lapse then; not a bucket's or a sliding window's, held as long whenever taken, whose unused quota
 * stays and grows as time passes.
 */
export function lapses(algorithm: Algorithm, at: number, units: number): boolean {
  return algorithm.leaseHoldMs(at - 1, units) !== algorithm.leaseHoldMs(at, units);
}
