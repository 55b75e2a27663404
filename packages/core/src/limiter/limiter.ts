import { EventEmitter } from 'eventemitter3';
import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { UnsupportedError } from '../errors.js';
import type { ObserveOptions } from '../observe/observation.js';
import type { Observer } from '../observe/observer.js';
import type { LimiterCore } from './core.js';
import { registerCore } from './core-registry.js';
import { chargeOf, chargeOptionsOf, checkKey, checkLimiterCost, ownAlgorithm, promised, rateCall, type ChargeOptions } from './call-input.js';
import { checkActualCost } from './settlement.js';
import { emitted } from './events.js';
import type { LeaseDecision } from './lease.js';
import type { LimiterOptions } from './options.js';
import type { Reservation, ReserveOptions } from './reservation.js';
import { acquireOf, blockOf, clearOverrideOf, controlOf, getOverrideOf, reserveOf, setOverrideOf, unblockOf, type BlockOptions, type OverrideOptions } from './key-verbs.js';
import type { Duration } from '../duration.js';
import { buildCore, buildingAt, fieldBeingBuilt } from './wiring.js';
import type { Store, StoredOverride } from '../store/interface.js';

/**
 * A limiter: one algorithm on one store, with a key namespace, a clock and a failure policy.
 * Options are parsed once here; `consume` does no option work per call. Every verb validates its input
 * once, then goes down the limiter's one charge path (its core): the deny cache, the circuit's gate,
 * the timeout and the failure policy.
 *
 * Events: `'storeError'` ({@link StoreErrorEvent}) each time the store fails or times out; `'circuit'` ({@link CircuitChange}) when the store-down
 * circuit (of a failure domain) opens or closes. An observer (option `observer`, or {@link observe}) hears every decision, store error and circuit change.
 */
export class Limiter extends EventEmitter {
  /** The algorithm of calls that give none; undefined when every call gives its own (see {@link consume}). */
  readonly algorithm: Algorithm | undefined;
  /** True for a concurrency limit (taken with {@link acquire}); false for a rate limit. */
  readonly isConcurrencyLimit: boolean;
  readonly store: Store;
  readonly prefix: string;
  /** The largest cost this limiter charges (option `maxCost`, default the algorithm's `maxCost`). */
  readonly maxCost: number;
  /** True when decisions are synchronous (a local store, and a local fallback if any): {@link consumeSync} works. */
  readonly synchronous: boolean;
  /** The lockout after a denial, in ms (option `blockDuration`; 0: none). */
  readonly blockMs: number;
  /** The limit's name in observer events (option `name`). */
  readonly name: string;
  readonly #core: LimiterCore;

  constructor(options: LimiterOptions) {
    super();
    const core = buildCore(options, fieldBeingBuilt(), emitted(this));
    this.#core = core;
    registerCore(this, core);
    ({ algorithm: this.algorithm, isConcurrencyLimit: this.isConcurrencyLimit, store: this.store, prefix: this.prefix } = core);
    ({ maxCost: this.maxCost, synchronous: this.synchronous, blockMs: this.blockMs, name: this.name } = core);
  }

  /**
   * Adds an observer of this limiter's decisions, store errors and circuit changes (see
   * `Observer`). `options.name` names the limit in its events (default: the limiter's `name`);
   * `options.keys` puts the request's key in them (default false). Returns the limiter.
   */
  observe(observer: Observer, options: ObserveOptions = {}): this {
    this.#core.observe(observer, options.name ?? this.name, options.keys === true, false, 'limiter.observe.observer');
    return this;
  }

  /** The full storage key for a user key. Throws {@link InvalidKeyError} for an empty or non-string key. */
  storageKey(key: string): string {
    checkKey(key);
    return this.#core.keyPrefix + key;
  }

  /**
   * Decides for one request of `cost` units (default 1) and records it when admitted. Rejects with a
   * {@link RateLimitError} for a bad key or cost, or a `clock` reading that is not a finite number
   * (nothing charged); store failures resolve according to `onStoreError`, never reject.
   *
   * `options` (or an algorithm alone): `algorithm` decides this call with another rate algorithm (a
   * plan or a quota chosen per request; a key's state is kept per algorithm kind, and carries over to
   * a new configuration clamped to its capacity, never a fresh full quota): `InvalidAlgorithmError`,
   * `UnsupportedError` or `CostExceedsCapacityError` when it cannot. `idempotencyKey` (and
   * `fingerprint`) make the charge idempotent: see {@link ChargeOptions}.
   */
  consume(key: string, cost = 1, options?: Algorithm | ChargeOptions): Promise<Decision> {
    try {
      // A local store without a deny cache: the synchronous path, wrapped once.
      if (options === undefined && this.#core.fastConsume) return Promise.resolve(this.consumeSync(key, cost));
      const { algorithm, idempotency } = chargeOptionsOf(this.#core, options, cost, 'limiter.consume.options');
      return promised(this.#core.charge(key, cost, rateCall(this.#core, key, cost, algorithm), undefined, idempotency));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link consume} without a promise, for local stores (`store.capabilities.local`, such as the
   * `MemoryStore`), whose decisions are synchronous: the same decision, the same validation, the same
   * failure policy, without a promise and a microtask per call (and without the deny cache, which a
   * local store does not need). Throws a {@link RateLimitError} for a bad key or cost (no state
   * changes), and {@link UnsupportedError} for a remote store (use `consume`) or a fallback whose own
   * store is remote. `options`: as for {@link consume}.
   */
  consumeSync(key: string, cost = 1, options?: Algorithm | ChargeOptions): Decision {
    const core = this.#core;
    if (options === undefined) {
      const fast = core.fastDecision(key, cost);
      if (fast !== undefined) return fast;
    }
    const { algorithm, idempotency } = chargeOptionsOf(core, options, cost, 'limiter.consumeSync.options');
    const a = rateCall(this.#core, key, cost, algorithm);
    if (!core.synchronous) {
      throw new UnsupportedError('limiter.consumeSync() needs a local store such as MemoryStore (and a local fallback, if any); otherwise use await limiter.consume().');
    }
    return core.charge(key, cost, a, undefined, idempotency) as Decision;
  }

  /**
   * Reserves `cost` units (default 1) for `key`: when they can be taken for a slot at most
   * `options.maxDelay` ahead, they are taken now and the reservation is admitted with `delayMs`, the
   * wait until its slot; later requests of the key queue behind it, in every process that shares the
   * store (one atomic step of the algorithm, `step(…, maxDelay)`: each algorithm's doc comment says
   * where its slots are). Otherwise it is denied at once with `retryAfterMs` (when a reservation with
   * this `maxDelay` would fit), nothing is taken, and a lockout (`blockDuration`) starts as after any
   * denial; a blocked key cannot reserve. `cancel()` gives the units back (see {@link Reservation}).
   * A cached denial answers it as it would a consume; a failed store gets the failure policy's
   * decision, with no delay. `options.algorithm`: as the third argument of {@link consume}.
   *
   * Rejects with `InvalidOptionError` (`limiter.reserve.maxDelay`) for a `maxDelay` that is not a
   * duration, negative, or above the algorithm's horizon (`maxReserveMs`), `UnsupportedError` for a
   * store without `capabilities.reservations` or a concurrency limit, and as {@link consume} for a
   * bad key, cost or algorithm; nothing is charged then.
   */
  reserve(key: string, cost = 1, options?: ReserveOptions): Promise<Reservation> {
    try {
      return reserveOf(this.#core, key, cost, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The decision for `cost` units (default 0: only the current state) without recording anything; `algorithm` as for {@link consume}. */
  peek(key: string, cost = 0, algorithm?: Algorithm): Promise<Decision> {
    try {
      checkKey(key);
      const a = algorithm === undefined ? ownAlgorithm(this.#core) : this.#core.checkCallAlgorithm(algorithm);
      checkLimiterCost(this, cost, a, true);
      return promised(this.#core.peek(key, cost, a));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Forgets the key's state (in each algorithm kind it was called with; its override stays): its next request starts with the full quota, its cached denial forgotten, a lockout
   * or ban lifted. Rejects with {@link InvalidKeyError} for a bad key, or after a `'storeError'` event with the `StoreError` or `StoreTimeoutError` when the store fails or times out.
   */
  async reset(key: string): Promise<void> {
    checkKey(key);
    await controlOf(this.#core, key, 'reset');
  }

  /**
   * Bans `key` for `duration` (from 1 ms) in the store: the next decision of the key in every instance is denied in the same store step, charging nothing
   * (`reason: 'blocked'`, `retryAfterMs` the ban's time left), until it ends or {@link unblock}; it replaces a lockout or an earlier ban. Needs `bans: true` (or `blockDuration`): `UnsupportedError` otherwise. Emits `'block'` (`BlockEvent`).
   */
  async block(key: string, duration: Duration, options?: BlockOptions): Promise<void> {
    this.emit('block', await blockOf(this.#core, key, duration, options));
  }

  /** Lifts `key`'s ban (or lockout), its state kept; every instance's deny cache forgets the key, as after a reset. */
  unblock(key: string): Promise<void> {
    return unblockOf(this.#core, key);
  }

  /**
   * Decides `key` with `algorithm` (of the limit's kind; a calendar: its period) for `options.ttl` in every instance: kept in the store, read by each decision in the
   * same store step; the key's state carries over (clamped); decisions carry its policy. Kept across `reset`. Needs `overrides: true` (`UnsupportedError`).
   */
  setOverride(key: string, algorithm: Algorithm, options: OverrideOptions): Promise<void> {
    return setOverrideOf(this.#core, key, algorithm, options);
  }

  /** `key`'s live override (its algorithm and when it ends), or undefined. */
  getOverride(key: string): Promise<StoredOverride | undefined> {
    return getOverrideOf(this.#core, key);
  }
  /** Removes `key`'s override: its next decision, in every instance, is the limit's own again. */
  clearOverride(key: string): Promise<void> {
    return clearOverrideOf(this.#core, key);
  }

  /**
   * Gives back `cost` units admitted earlier for `key` (a rollback, a request that should not count after all), under the algorithm it
   * was charged with (as for {@link consume}). With the request's `decision` the store gives back only to the window it was charged in,
   * never raising the balance above what it would be had the request not been charged (a bucket: the cost less what refilled since); a
   * decision that charged nothing (a denial, a `reason`) gives nothing back. Without: a rollback right after the charge. The key's cached
   * denial is forgotten, so the freed units can be used at once; a lost give-back is a `'storeError'` event.
   */
  undo(key: string, cost?: number, decision?: Decision): Promise<void>;
  undo(key: string, cost: number, algorithm: Algorithm | undefined, decision?: Decision): Promise<void>;
  async undo(key: string, cost = 1, algorithmOrDecision?: Algorithm | Decision, decision?: Decision): Promise<void> {
    const charge = chargeOf(this.#core, key, cost, algorithmOrDecision, decision, 'limiter.undo.decision');
    if (charge.decision === undefined) return this.#core.undo(key, cost, charge.algorithm);
    if (!charge.decision.allowed || charge.decision.reason !== undefined) return;
    await this.#core.undo(key, cost, charge.algorithm, charge.decision);
  }

  /**
   * Settles a request's charge at its real cost once its work is done: `cost` is what `consume`
   * charged, `decision` what it returned, `actualCost` (0 or more) what the request really cost. The
   * difference is given back (as by {@link undo}) or charged (never denied, never past `maxDebt`: a
   * token bucket in debt makes later requests wait `debt / rate`) in one store call, in the window the
   * request was charged in. Once per decision: again, or after an `undo`, it is ignored (warning
   * `RL_ALREADY_SETTLED`); a decision that charged nothing settles nothing. Rejects with `InvalidCostError`
   * for a bad `actualCost`, `UnsupportedError` for a concurrency limit or a store without `capabilities.settle`.
   */
  settle(key: string, cost: number, actualCost: number, decision: Decision): Promise<void>;
  settle(key: string, cost: number, actualCost: number, algorithm: Algorithm | undefined, decision: Decision): Promise<void>;
  async settle(key: string, cost: number, actualCost: number, algorithmOrDecision: Algorithm | Decision | undefined, decision?: Decision): Promise<void> {
    const charge = chargeOf(this.#core, key, cost, algorithmOrDecision, decision, 'limiter.settle.decision', true);
    checkActualCost(actualCost);
    if (this.isConcurrencyLimit || this.store.capabilities.settle !== true) throw new UnsupportedError('limiter.settle() needs a rate limit on a store that settles (capabilities.settle), such as MemoryStore or RedisStore.');
    await this.#core.settle(key, cost, actualCost, charge.algorithm, charge.decision!);
  }

  /** Gives back what the quota leases hold (option `lease`; a lost give-back is a `'storeError'` event); later calls go to the store. The store stays open. */
  close(): Promise<void> {
    return this.#core.close();
  }

  /**
   * Takes a permit of a concurrency limit. When `allowed`, call `release()` once the work is done
   * (extra calls do nothing); a permit never released expires after the algorithm's `lease`.
   */
  acquire(key: string): Promise<LeaseDecision> {
    try {
      return promised(acquireOf(this.#core, key));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** Creates a {@link Limiter}; throws {@link InvalidOptionError} for bad options. */
export function createLimiter(options: LimiterOptions): Limiter {
  return new Limiter(options);
}

/** A {@link Limiter} whose option errors name `field` instead of `createLimiter` (the HTTP layer's limits: `rateLimit.limits[1].onStoreError`). Internal. */
export function limiterAt(options: LimiterOptions, field: string): Limiter {
  return buildingAt(field, () => new Limiter(options));
}
