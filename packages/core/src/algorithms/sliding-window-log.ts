import type { LogAlgorithm, LogState, UndoRequest } from '../algorithm.js';
import { decisionFromExact, EPSILON } from '../decision.js';
import { formatDuration } from '../duration.js';
import { ownKeysFields } from './define.js';
import { parseWindowOptions, type WindowOptions } from './window-options.js';

/** `limit` units in any rolling window; `countDenied` records denied requests too. */
export type SlidingWindowLogOptions = WindowOptions;

/**
 * A log of fewer records has its sum taken from the records (see `settleSum`); the Redis store reads
 * such a log whole with one LRANGE (packages/store-redis/src/lua/sliding-window-log.lua, FIRST).
 */
const SHORT_LOG = 8;

/**
 * Sliding window log, exact: at `now` the window is `(now − window, now]`, so a record exactly one
 * window old no longer counts. A request of cost `c` is admitted when the recorded costs in the
 * window plus `c` are at most `limit`, and is then recorded with its cost. Capacity comes back when
 * the oldest records leave: after 100 requests at 0.990 s (limit 100 per 1 s), the next is admitted
 * at exactly 1.990 s, not before.
 *
 * State: the recorded requests (time, cost), oldest first: at most `limit` records for whole costs.
 * With `countDenied`, denials are recorded with a negative cost, and consecutive denials share one
 * record (moved to the latest denial's time), so a flood adds one record, not one per request.
 * Expires one window after the newest record. A clock that goes back records at the newest stored time
 * (never before it).
 *
 * A give-back with the time of its charge (`undo(…, chargedAt)`) removes the record of that cost made
 * at that time, and nothing once `chargedAt` has left the window (or when no such record is kept: after
 * a clock that went back the record was made at a later time, and is left, stricter, never looser).
 * When no record made then has that cost, it gives back part of the newest one made then with a
 * larger cost: a quota lease's block, of which the unused units come back.
 * Removing another record of the same cost, a later one, would raise the balance when the charged one
 * would have left the window.
 *
 * A reservation (`step(…, maxDelay)`, `maxDelay` at most one window) gets the earliest time its cost
 * fits, never before the newest record: `now`, or when enough of the oldest records have left the
 * window; it is recorded at that time (`delayMs` ahead), so later requests count it and queue behind
 * it (a consume is admitted only when it fits with every record counted, the reservations' included:
 * it never takes what a reservation holds, as after a clock that went back it records at the newest). A
 * denied reservation records nothing (also with `countDenied`) and says when it would fit. Its cancel
 * (`undo(…, chargedAt, delayMs)`) removes its record (the newest of its cost made within the
 * millisecond before `chargedAt + delayMs`, the slot as the decision reports it); later reservations
 * keep their records, and a new one still goes after the newest record.
 */
export function slidingWindowLog(options: SlidingWindowLogOptions): LogAlgorithm {
  const { limit, windowMs, countDenied, policy, common } = parseWindowOptions(options, 'slidingWindowLog');

  /**
   * The sum of a log of fewer than {@link SHORT_LOG} records is taken from its records, oldest first,
   * at the start of each step, as the Redis script does (it reads such a log whole and keeps no running
   * sum for it): with fractional costs a running sum drifts from that by float rounding, which could
   * turn a decision at the limit. With every cost 1 (`costs === null`) both are the same whole number.
   */
  function settleSum(state: LogState): void {
    const { costs } = state;
    if (costs === null || costs.length - state.head >= SHORT_LOG) return;
    let sum = 0;
    for (let i = state.head; i < costs.length; i++) sum += Math.abs(costs[i]!);
    state.sum = sum;
  }

  /** Drops records at or before `now − window` (left edge exclusive), compacting now and then. */
  function prune(state: LogState, now: number): void {
    const edge = now - windowMs;
    const { times, costs } = state;
    let head = state.head;
    if (costs === null) {
      while (head < times.length && times[head]! <= edge) head++;
      state.sum -= head - state.head;
    } else {
      while (head < times.length && times[head]! <= edge) {
        state.sum -= Math.abs(costs[head]!);
        head++;
      }
    }
    if (head === times.length) {
      times.length = 0;
      state.costs = null;
      state.sum = 0;
      head = 0;
    } else if (head > 8 && head * 2 > times.length) {
      times.splice(0, head);
      costs?.splice(0, head);
      head = 0;
    }
    state.head = head;
  }

  /** Sum of live costs at `now` without changing the state. */
  function liveSum(state: LogState, now: number): number {
    const edge = now - windowMs;
    const { times, costs } = state;
    let sum = state.sum;
    for (let i = state.head; i < times.length && times[i]! <= edge; i++)
      sum -= costs === null ? 1 : Math.abs(costs[i]!);
    return sum;
  }

  /** Appends a record; the costs array appears with the first record that does not cost 1. */
  function record(state: LogState, at: number, signedCost: number): void {
    if (state.costs === null && signedCost !== 1) state.costs = new Array<number>(state.times.length).fill(1);
    state.times.push(at);
    state.costs?.push(signedCost);
  }

  /**
   * The earliest time at which enough of the oldest live records at `now` have left the window for
   * `cost` more units, `recorded` being the live sum (`now` when none need to leave).
   */
  function fitTime(state: LogState, now: number, recorded: number, cost: number): number {
    const edge = now - windowMs;
    const { times, costs } = state;
    let freed = 0;
    for (let i = state.head; i < times.length; i++) {
      if (times[i]! <= edge) continue;
      freed += costs === null ? 1 : Math.abs(costs[i]!);
      if (recorded - freed + cost <= limit + EPSILON) return times[i]! + windowMs;
    }
    return now;
  }

  return {
    ...ownKeysFields({
      kind: 'sliding-window-log',
      stateKind: 'log',
      stateTag: 'swl',
      ...common,
      // The records, and their running sum (kept while the log is long).
      keys: ['', ':sum'],
      // 0.1.0 kept the sum for every log and read it whenever the log was not empty: a process of that
      // version sharing a log with this one would read a stale sum, so the two never share one.
      layoutRevision: 2,
    }),

    describe: () =>
      `any rolling window (now − ${formatDuration(windowMs)}, now] admits at most ${limit}, exactly; one record per admitted request`,
    boundInSpan: (spanMs: number) => limit * Math.ceil(spanMs / windowMs),
    leaseHoldMs: () => windowMs,

    step(existing, { now, cost, commit, maxDelay }) {
      const state: LogState = existing ?? { times: [], costs: null, head: 0, sum: 0 };
      settleSum(state);
      let used: number;
      if (commit) {
        prune(state, now);
        used = state.sum;
      } else {
        used = liveSum(state, now);
      }
      const { times } = state;
      const newest = times.length > state.head ? times[times.length - 1]! : -Infinity;
      const room = used + cost <= limit + EPSILON;
      let allowed: boolean;
      let slot = Math.max(now, newest);
      const reserving = maxDelay !== undefined;
      if (!reserving) {
        // A consume takes only what every record leaves, the reservations' included.
        allowed = room;
      } else {
        if (!room) slot = Math.max(slot, fitTime(state, now, used, cost));
        allowed = slot - now <= maxDelay + EPSILON;
      }
      const counts = allowed || (countDenied && !reserving);
      if (commit && counts) {
        const last = times.length - 1;
        const costs = state.costs;
        if (!allowed && costs !== null && last >= state.head && costs[last]! < 0) {
          // Consecutive counted denials share one record, which moves to `at`: a flood adds no records,
          // and the merged units leave the window later, never sooner.
          times[last] = slot;
          costs[last]! -= cost;
        } else {
          record(state, slot, allowed ? cost : -cost);
        }
        state.sum += cost;
      }
      const after = counts ? used + cost : used;
      // The newest record, the request's own when it counts: recorded, or (a peek of a cost) as if it were.
      const last = counts && (commit || cost > 0) ? slot : newest;
      let retryInMs = 0;
      if (!allowed) {
        // The earliest time enough of the oldest live records have left the window (and, for a
        // reservation, that is at most `maxDelay` away; for a consume, no record is later).
        const recorded = commit && counts ? used + cost : used;
        retryInMs = reserving ? slot - now - maxDelay : fitTime(state, now, recorded, cost) - now;
      }
      const resetInMs = after > EPSILON && last > -Infinity ? last + windowMs - now : 0;
      const delay = allowed && reserving ? slot - now : 0;
      return {
        state,
        decision: decisionFromExact({
          allowed,
          remaining: limit - after,
          resetInMs,
          retryInMs,
          delayInMs: delay,
          limit,
          policy,
          at: now,
        }),
      };
    },

    expiresAt(state) {
      return state.times.length > state.head ? state.times[state.times.length - 1]! + windowMs : -Infinity;
    },

    undo(state, back) {
      const i = recordOf(state, back, windowMs);
      if (i !== -1) {
        state.times.splice(i, 1);
        state.costs?.splice(i, 1);
        state.sum -= back.cost;
        return;
      }
      // No record of its cost: with the time of its charge, part of the newest record made then with a larger one.
      const part = back.chargedAt === undefined ? -1 : recordOf(state, back, windowMs, (c) => c > back.cost);
      if (part === -1) return;
      state.costs ??= new Array<number>(state.times.length).fill(1);
      state.costs[part] = state.costs[part]! - back.cost;
      state.sum -= back.cost;
    },

    settle(state, request) {
      const { now, cost, actual, maxDebt } = request;
      const i = recordOf(state, request, windowMs);
      if (i === -1) return;
      settleSum(state);
      // More than the estimate: taken up to limit + maxDebt in all (the live records' sum).
      const next =
        actual <= cost ? actual : cost + Math.max(0, Math.min(actual - cost, limit + maxDebt - liveSum(state, now)));
      if (next === 0) {
        state.times.splice(i, 1);
        state.costs?.splice(i, 1);
      } else {
        state.costs ??= new Array<number>(state.times.length).fill(1);
        state.costs[i] = next;
      }
      state.sum += next - cost;
    },
  };
}

/**
 * The index of the record a charge of `cost` made (see `undo` above): with the time of the charge, the
 * record made at that time with this cost (another one would leave the window at another time), none
 * once it has left the window; without, the newest record of this cost, the one a rollback right after
 * its charge admitted (or one just like it). A reservation's record is at its slot, known to the ms
 * the decision reported (rounded up). -1 when there is none. `fits` is what the record's cost must be
 * (by default the charge's own; a larger one for a give-back of part of a quota lease's block).
 */
function recordOf(
  state: LogState,
  { now, cost, chargedAt, delayMs = 0 }: UndoRequest,
  windowMs: number,
  fits: (recordCost: number) => boolean = (c) => c === cost,
): number {
  const at = chargedAt === undefined ? undefined : chargedAt + delayMs;
  const from = at === undefined ? -Infinity : delayMs > 0 ? at - 1 : at;
  if (at !== undefined && at <= now - windowMs) return -1;
  const { times, costs } = state;
  for (let i = times.length - 1; i >= state.head; i--) {
    // Times never decrease along the log: past the charge's time, no record can be its.
    if (times[i]! < from) return -1;
    if (
      fits(costs === null ? 1 : costs[i]!) &&
      (at === undefined || (times[i]! <= at && (delayMs > 0 ? times[i]! > from : true)))
    )
      return i;
  }
  return -1;
}
