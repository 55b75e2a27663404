import type { Algorithm, StepRequest } from '../algorithm.js';
import { ceilMs, type Decision } from '../decision.js';
import type { StoredOverride } from './interface.js';

/** Overrides a new one looks at, when the table is full, for one that has ended before it drops a live one. */
const LOOK_AHEAD = 8;

/**
 * The overrides of a local store (`Store.setOverride`): per key and state kind (the algorithm's
 * `stateTag`, as the state), the configuration it is decided with and when that ends, on the clock
 * it was set with. At most `maxKeys`: when full, a new override drops an ended one among the oldest
 * few, else the oldest. An ended override is dropped when it is next read, or by the sweep.
 */
export class OverrideTable {
  private readonly entries = new Map<string, StoredOverride>();

  constructor(private readonly maxKeys = Infinity) {}

  /** Overrides held, live or ended but not yet dropped. */
  get size(): number {
    return this.entries.size;
  }

  /** Decides `key`'s state of `override`'s kind with `override` until `expiresAt` (replacing an earlier one). */
  set(key: string, override: Algorithm, expiresAt: number, now: number): void {
    const id = `${override.stateTag}\u0000${key}`;
    this.entries.delete(id);
    if (this.entries.size >= this.maxKeys) this.makeRoom(now);
    this.entries.set(id, { algorithm: override, expiresAt });
  }

  /** The configuration `key` is decided with under `algorithm` at `now`: its live override when `algorithm` checks overrides (`checksOverrides`), else `algorithm` itself. */
  decidingWith<A extends Algorithm>(key: string, algorithm: A, now: number): A {
    if (algorithm.checksOverrides !== true || this.entries.size === 0) return algorithm;
    return (this.get(key, algorithm, now)?.algorithm as A | undefined) ?? algorithm;
  }

  /** `key`'s live override of `algorithm`'s kind at `now`, or undefined (an ended one is dropped). */
  get(key: string, algorithm: Algorithm, now: number): StoredOverride | undefined {
    const id = `${algorithm.stateTag}\u0000${key}`;
    const entry = this.entries.get(id);
    if (entry === undefined || entry.expiresAt > now) return entry;
    this.entries.delete(id);
    return undefined;
  }

  /** Removes `key`'s override of `algorithm`'s kind. */
  clear(key: string, algorithm: Algorithm): void {
    this.entries.delete(`${algorithm.stateTag}\u0000${key}`);
  }

  /** Drops the overrides that have ended at `now`; returns how many. */
  sweep(now: number): number {
    let removed = 0;
    for (const [id, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.entries.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /** Drops every override. */
  clearAll(): void {
    this.entries.clear();
  }

  /** Drops one override: an ended one among the {@link LOOK_AHEAD} oldest, else the oldest. */
  private makeRoom(now: number): void {
    let oldest: string | undefined;
    let looked = 0;
    for (const [id, entry] of this.entries) {
      oldest ??= id;
      if (entry.expiresAt <= now) {
        this.entries.delete(id);
        return;
      }
      if (++looked >= LOOK_AHEAD) break;
    }
    if (oldest !== undefined) this.entries.delete(oldest);
  }
}

/**
 * `decision`, made under a key's live `override` for a charge (or peek) of `request.cost` at
 * `request.now` (ms, on the clock the override was set with): a denial of a cost above the override's
 * limit is retried at the override's end, or at the end of the key's block (`blockedMs`: the lockout's
 * or ban's time left; 0 for none) if later, since no retry under the override could admit that cost
 * and once it ends the limit's own configuration decides; any other decision is returned as it is. The
 * Redis store's twin is in its idem-reply.lua.
 */
export function decidedUnder(
  override: StoredOverride,
  decision: Decision,
  request: { readonly cost: number; readonly now: number },
  blockedMs: number,
): Decision {
  if (decision.allowed || request.cost <= decision.limit) return decision;
  const retryAfterMs = Math.max(blockedMs, ceilMs(override.expiresAt - request.now));
  return retryAfterMs === decision.retryAfterMs ? decision : { ...decision, retryAfterMs };
}

/**
 * The step's request under a key's live `override`: a reservation (`maxDelay`) of a cost above the
 * override's limit accepts no slot at all ({@link NO_SLOT}), since none could ever fit it; every step
 * then denies it as a reservation, taking and counting nothing (also with `countDenied`), and
 * {@link decidedUnder} retries it at the override's end. An algorithm's reservation assumes a cost
 * within its capacity (the limiter checks a cost against the limit's own configuration, which an
 * override may lower): stepped with its own `maxDelay`, it would be admitted for a slot that takes more
 * than the override allows. Any other request is returned as it is. The Redis store's twin is in its
 * override read (src/script-plan.ts).
 */
export function requestUnder(override: StoredOverride, request: StepRequest): StepRequest {
  if (request.maxDelay === undefined || request.cost <= override.algorithm.limit) return request;
  return { now: request.now, cost: request.cost, commit: request.commit, maxDelay: NO_SLOT };
}

/** A reservation's `maxDelay` that no slot fits, not even one now (see {@link requestUnder}, `StepRequest.maxDelay`). */
export const NO_SLOT = -1;
