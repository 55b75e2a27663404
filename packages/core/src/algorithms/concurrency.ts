import type { ConcurrencyAlgorithm, LeaseState } from '../algorithm.js';
import { decisionFromExact, makePolicy } from '../decision.js';
import { formatDuration, type Duration } from '../duration.js';
import { checkOptions, countOption, spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import { ownKeysFields } from './define.js';

export interface ConcurrencyOptions {
  /** Most requests in flight at once per key (an integer from 1 to 999999999999999). */
  limit: number;
  /**
   * How long a permit lives when it is never released (a crashed process, a lost release): after this
   * it is taken back. Choose it above the slowest legitimate request. Default `'1m'`; from 1 ms to
   * 999999999999999 ms.
   */
  lease?: Duration;
}

/**
 * Concurrency limit: at most `limit` permits held at once per key. Use it through
 * `limiter.acquire(key)`, which returns a decision with `release()`. Unlike rates, permits come back
 * when released (or when their lease expires).
 *
 * Decision fields: `remaining` permits left after this one; `retryAfterMs` (when denied) the time until
 * the oldest lease expires, an upper bound (a release frees a permit sooner); `resetMs` the time until
 * the newest lease expires.
 */
export function concurrency(options: ConcurrencyOptions): ConcurrencyAlgorithm {
  const o = checkOptions(options, ['limit', 'lease'], 'concurrency');
  const limit = countOption(o.limit, 'concurrency.limit');
  const leaseMs = o.lease === undefined ? 60_000 : spanOption(o.lease, 'concurrency.lease');
  warnShortSpan(o.lease, 'concurrency.lease');
  const policy = makePolicy(limit, leaseMs, `${limit}-concurrent`);

  return {
    ...ownKeysFields({
      kind: 'concurrency',
      stateKind: 'leases',
      stateTag: 'cc',
      limit,
      maxCost: 1,
      policy,
      countDenied: false,
      mayDelay: false,
      maxReserveMs: 0,
      options: { limit, lease: leaseMs },
      constants: [
        { name: 'LIMIT', value: limit },
        { name: 'LEASE_MS', value: leaseMs },
      ],
      // The leases and the time each expires.
      keys: [''],
    }),
    leaseMs,

    describe: () =>
      `requests in flight at once: at most ${limit}; permits come back on release (or after the lease, ${formatDuration(leaseMs)})`,
    // Permits, not a rate: it bounds no span.
    boundInSpan: () => undefined,
    // Permits are held per request, never leased in blocks.
    leaseHoldMs: () => 0,

    acquire(existing: LeaseState | undefined, now: number, leaseId: string, commit: boolean) {
      const state: LeaseState = existing ?? new Map();
      let oldest = Infinity;
      let newest = -Infinity;
      let live = 0;
      for (const [id, expiresAt] of state) {
        if (expiresAt <= now) {
          if (commit) state.delete(id);
          continue;
        }
        live++;
        if (expiresAt < oldest) oldest = expiresAt;
        if (expiresAt > newest) newest = expiresAt;
      }
      // Acquiring a lease id that is already live renews it: it holds its permit, it takes no other.
      const held = (state.get(leaseId) ?? -Infinity) > now;
      const allowed = held || live < limit;
      if (allowed && commit) {
        state.set(leaseId, now + leaseMs);
        if (!held) live++;
        newest = Math.max(newest, now + leaseMs);
      }
      return {
        state,
        decision: decisionFromExact({
          allowed,
          remaining: limit - live,
          resetInMs: newest > now ? newest - now : 0,
          retryInMs: oldest - now,
          delayInMs: 0,
          limit,
          policy,
          at: now,
        }),
      };
    },

    release(state: LeaseState, leaseId: string): boolean {
      return state.delete(leaseId);
    },

    expiresAt(state: LeaseState): number {
      let newest = -Infinity;
      for (const expiresAt of state.values()) if (expiresAt > newest) newest = expiresAt;
      return newest;
    },
  };
}
