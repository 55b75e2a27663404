import type { LogAlgorithm, LogState } from '../algorithm.js';
import { decisionFromExact, EPSILON } from '../decision.js';
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
 * Removing another record of the same cost, a later one, would raise the balance when the charged one
 * would have left the window.
 */
export function slidingWindowLog(options: SlidingWindowLogOptions): LogAlgorithm {
  const { limit, windowMs, countDenied, common, constants } = parseWindowOptions(options, 'slidingWindowLog');
  const policy = common.policy;

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
    for (let i = state.head; i < times.length && times[i]! <= edge; i++) sum -= costs === null ? 1 : Math.abs(costs[i]!);
    return sum;
  }

  /** Appends a record; the costs array appears with the first record that does not cost 1. */
  function record(state: LogState, at: number, signedCost: number): void {
    if (state.costs === null && signedCost !== 1) state.costs = new Array<number>(state.times.length).fill(1);
    state.times.push(at);
    state.costs?.push(signedCost);
  }

  return {
    kind: 'sliding-window-log',
    stateKind: 'log',
    stateTag: 'swl',
    ...common,
    script: {
      name: 'sliding-window-log',
      constants,
      // The records, and their running sum (kept while the log is long).
      layout: { compact: false, keys: ['', ':sum'] },
      // 0.1.0 kept the sum for every log and read it whenever the log was not empty: a process of that
      // version sharing a log with this one would read a stale sum, so the two never share one.
      layoutRevision: 2,
    },

    step(existing, now, cost, commit) {
      const state: LogState = existing ?? { times: [], costs: null, head: 0, sum: 0 };
      settleSum(state);
      let used: number;
      if (commit) {
        prune(state, now);
        used = state.sum;
      } else {
        used = liveSum(state, now);
      }
      const allowed = used + cost <= limit + EPSILON;
      const { times } = state;
      const newest = times.length > state.head ? times[times.length - 1]! : -Infinity;
      if (commit && (allowed || countDenied)) {
        const at = Math.max(now, newest);
        const last = times.length - 1;
        const costs = state.costs;
        if (!allowed && costs !== null && last >= state.head && costs[last]! < 0) {
          // Consecutive counted denials share one record, which moves to `at`: a flood adds no records,
          // and the merged units leave the window later, never sooner.
          times[last] = at;
          costs[last]! -= cost;
        } else {
          record(state, at, allowed ? cost : -cost);
        }
        state.sum += cost;
      }
      const after = allowed || countDenied ? used + cost : used;
      const last = commit && (allowed || countDenied) ? Math.max(now, newest) : newest;
      let retryInMs = 0;
      if (!allowed) {
        // The earliest time enough of the oldest live records have left the window.
        const edge = now - windowMs;
        const recorded = commit && countDenied ? used + cost : used;
        const costs = state.costs;
        let freed = 0;
        let retryAt = now;
        for (let i = state.head; i < times.length; i++) {
          if (times[i]! <= edge) continue;
          freed += costs === null ? 1 : Math.abs(costs[i]!);
          if (recorded - freed + cost <= limit + EPSILON) {
            retryAt = times[i]! + windowMs;
            break;
          }
        }
        retryInMs = retryAt - now;
      }
      const resetInMs = after > EPSILON && last > -Infinity ? last + windowMs - now : 0;
      return { state, decision: decisionFromExact(allowed, limit - after, resetInMs, retryInMs, 0, limit, policy, now) };
    },

    expiresAt(state) {
      return state.times.length > state.head ? state.times[state.times.length - 1]! + windowMs : -Infinity;
    },

    undo(state, now, cost, chargedAt) {
      // With the time of the charge: the record made at that time with this cost (another one would
      // leave the window at another time), nothing once it has left the window. Without: the newest
      // record of this cost, the one a rollback right after its charge admitted (or one just like it).
      if (chargedAt !== undefined && chargedAt <= now - windowMs) return;
      const { times, costs } = state;
      for (let i = times.length - 1; i >= state.head; i--) {
        // Times never decrease along the log: past the charge's time, no record can be its.
        if (chargedAt !== undefined && times[i]! < chargedAt) return;
        if ((costs === null ? 1 : costs[i]) === cost && (chargedAt === undefined || times[i] === chargedAt)) {
          times.splice(i, 1);
          costs?.splice(i, 1);
          state.sum -= cost;
          return;
        }
      }
    },
  };
}
