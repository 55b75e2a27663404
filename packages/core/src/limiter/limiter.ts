import { EventEmitter } from 'eventemitter3';
import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import { InvalidOptionError, UnsupportedError } from '../errors.js';
import type { ObserveOptions } from '../observe/observation.js';
import type { Observer } from '../observe/observer.js';
import { checkOptions, isPrintableAscii, spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import type { Charge, MaybePromise, Store, StoredOverride } from '../store/interface.js';
import type { BlockEvent, BlockOptions } from './block-options.js';
import { requireCapability } from './capabilities.js';
import type { ChargeAnswer } from './charge-path.js';
import {
  chargeOptionsOf,
  checkKey,
  checkLimiterCost,
  isDecisionLike,
  ownAlgorithm,
  parseEarlierCharge,
  promised,
  rateCall,
  type ChargedWith,
  type ChargeOptions,
  type OptionsAt,
} from './call-input.js';
import type { LimiterCore } from './core.js';
import { registerCore } from './core-registry.js';
import { emitted } from './events.js';
import type { LeaseDecision } from './lease.js';
import type { LimiterOptions } from './options.js';
import { readOverride, removeOverride, writeOverride, type OverrideOptions } from './overrides.js';
import { chargedOf, receipted } from './receipt.js';
import { parseMaxDelay, withCancel, type Reservation, type ReserveOptions } from './reservation.js';
import { checkActualCost } from './settlement.js';
import { buildCore } from './wiring.js';

const CONSUME: OptionsAt = { field: 'limiter.consume.options' };
const CONSUME_SYNC: OptionsAt = { field: 'limiter.consumeSync.options' };
const RESERVE: OptionsAt = { field: 'limiter.reserve.options', extra: ['maxDelay'] };

/**
 * A limiter: one algorithm on one store, with a key namespace, a clock and a failure policy.
 * Options are parsed once here; `consume` does no option work per call. Every verb validates its input
 * once, then goes down the limiter's one charge path (its core): the deny cache, the circuit's gate,
 * the timeout and the failure policy.
 *
 * Events: `'storeError'` ({@link StoreErrorEvent}) each time the store fails or times out; `'circuit'`
 * ({@link CircuitChange}) when the store-down circuit (of a failure domain) opens or closes; `'block'`
 * ({@link BlockEvent}) for each ban made through {@link block}. An observer (option `observer`, or
 * {@link observe}) hears every decision, store error and circuit change.
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

  /** `field`: where `options` were given, as option errors name them (default `createLimiter`; the HTTP layer's limits: `rateLimit.limits[1]`). */
  constructor(options: LimiterOptions, field = 'createLimiter') {
    super();
    const core = buildCore(options, field, emitted(this));
    this.#core = core;
    registerCore(this, core);
    this.algorithm = core.algorithm;
    this.isConcurrencyLimit = core.isConcurrencyLimit;
    this.store = core.store;
    this.prefix = core.prefix;
    this.maxCost = core.maxCost;
    this.synchronous = core.synchronous;
    this.blockMs = core.blockMs;
    this.name = core.name;
  }

  /**
   * Adds an observer of this limiter's decisions, store errors and circuit changes (see
   * `Observer`). `options.name` names the limit in its events (default: the limiter's `name`);
   * `options.keys` puts the request's key in them (default false). Returns the limiter.
   */
  observe(observer: Observer, options: ObserveOptions = {}): this {
    this.#core.observe(observer, {
      limit: options.name ?? this.name,
      keys: options.keys === true,
      dryRun: false,
      field: 'limiter.observe.observer',
    });
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
   * `fingerprint`) make the charge idempotent: see {@link ChargeOptions}; {@link receiptOf} the
   * decision says whether it was a replay.
   */
  consume(key: string, cost = 1, options?: Algorithm | ChargeOptions): Promise<Decision> {
    try {
      const core = this.#core;
      // A local store without a deny cache: the store's own decision, wrapped once (straight to the core,
      // not through consumeSync: one call less to inline).
      if (options === undefined && core.fastConsume) {
        const fast = core.fastDecision(key, cost);
        if (fast !== undefined) return Promise.resolve(fast);
      }
      const answer = core.charge(this.#charge(key, cost, options, CONSUME));
      return answer instanceof Promise ? answer.then(receipted) : Promise.resolve(receipted(answer));
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
    const charge = this.#charge(key, cost, options, CONSUME_SYNC);
    if (!core.synchronous) {
      throw new UnsupportedError(
        'limiter.consumeSync() needs a local store such as MemoryStore (and a local fallback, if any); otherwise use await limiter.consume().',
      );
    }
    return receipted(core.charge(charge) as ChargeAnswer);
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
      if (options === null || typeof options !== 'object')
        throw new InvalidOptionError('limiter.reserve.options', options, '{ maxDelay } (and optionally algorithm)');
      const core = this.#core;
      const planned = this.#charge(key, cost, options, RESERVE);
      const charge: Charge = {
        ...planned,
        maxDelayMs: parseMaxDelay(options.maxDelay, planned.algorithm, 'limiter.reserve.maxDelay'),
      };
      requireCapability(core.store, 'reservations', 'limiter.reserve()');
      const reservation = (answer: ChargeAnswer): Reservation =>
        withCancel(receipted(answer), core.localClock, () => core.cancel(charge, answer));
      const answer = core.charge(charge);
      return answer instanceof Promise ? answer.then(reservation) : Promise.resolve(reservation(answer));
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
   * Forgets the key's state (in its algorithm's kind and each kind it was called with; without an
   * algorithm of its own, in every rate kind the store runs; its override stays): its next
   * request starts with the full quota, its cached denial forgotten, a lockout lifted, and a ban lifted
   * in every kind (as {@link block} writes it: a plan of another kind chosen per call, here or in
   * another instance, is admitted again too). Rejects
   * with {@link InvalidKeyError} for a bad key, or after a `'storeError'` event with the `StoreError`
   * or `StoreTimeoutError` when the store fails or times out.
   */
  async reset(key: string): Promise<void> {
    checkKey(key);
    const core = this.#core;
    core.quota?.forget(core.keyPrefix + key);
    const store = this.store;
    const calls: StoreControl[] = Array.from(core.calls.layouts(), (a) => (storeKey) => store.reset(storeKey, a));
    // A ban is in every rate layout (see `block`): lifted in those a reset does not go through too.
    if (core.bans && store.unban !== undefined)
      for (const a of core.calls.unbanOnReset()) calls.push((storeKey) => store.unban!(storeKey, a));
    await this.#control(key, 'reset', calls);
  }

  /**
   * Bans `key` for `duration` (from 1 ms) in the store: the next decision of the key in every instance
   * is denied in the same store step, charging nothing (`reason: 'blocked'`, `retryAfterMs` the ban's
   * time left), until it ends or {@link unblock}; it replaces a lockout or an earlier ban. Needs `bans:
   * true` (or `blockDuration`): `UnsupportedError` otherwise. Emits `'block'` (`BlockEvent`).
   */
  async block(key: string, duration: Duration, options?: BlockOptions): Promise<void> {
    checkKey(key);
    const durationMs = spanOption(duration, 'limiter.block.duration');
    warnShortSpan(duration, 'limiter.block.duration');
    const o = checkOptions(options === undefined ? {} : options, ['reason'], 'limiter.block.options');
    const reason = o.reason;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 200 || !isPrintableAscii(reason))) {
      throw new InvalidOptionError(
        'limiter.block.options.reason',
        reason,
        'printable ASCII text of at most 200 characters',
      );
    }
    this.#checkBans('limiter.block');
    const store = this.store;
    await this.#control(
      key,
      'ban',
      Array.from(this.#core.calls.banLayouts(), (a) => (storeKey, now) => store.ban!(storeKey, a, durationMs, now)),
    );
    const event: BlockEvent = { key, durationMs, reason: reason as string | undefined };
    this.emit('block', event);
  }

  /** Lifts `key`'s ban (or lockout), its state kept; every instance's deny cache forgets the key, as after a reset. */
  async unblock(key: string): Promise<void> {
    checkKey(key);
    this.#checkBans('limiter.unblock');
    const store = this.store;
    await this.#control(
      key,
      'unban',
      Array.from(this.#core.calls.banLayouts(), (a) => (storeKey) => store.unban!(storeKey, a)),
    );
  }

  /**
   * Decides `key` with `algorithm` (of the limit's kind; a calendar: its period) for `options.ttl` in
   * every instance: kept in the store, read by each decision in the same store step; the key's state
   * carries over (clamped); decisions carry its policy. Kept across `reset`. Needs `overrides: true`
   * (`UnsupportedError`).
   */
  setOverride(key: string, algorithm: Algorithm, options: OverrideOptions): Promise<void> {
    return writeOverride(this.#core, key, algorithm, options);
  }

  /** `key`'s live override (its algorithm and when it ends), or undefined. */
  getOverride(key: string): Promise<StoredOverride | undefined> {
    return readOverride(this.#core, key);
  }

  /** Removes `key`'s override: its next decision, in every instance, is the limit's own again. */
  clearOverride(key: string): Promise<void> {
    return removeOverride(this.#core, key);
  }

  /**
   * Gives back `cost` units admitted earlier for `key` (a rollback, a request that should not count
   * after all), under the algorithm it was charged with (as for {@link consume}). With the request's
   * `decision` the store gives back only to the window it was charged in, never raising the balance
   * above what it would be had the request not been charged (a bucket: the cost less what refilled
   * since); a decision that charged nothing (a denial, a `reason`, a replay) gives nothing back.
   * Without: a rollback right after the charge. The key's cached denial is forgotten, so the freed
   * units can be used at once; a lost give-back is a `'storeError'` event.
   */
  undo(key: string, cost?: number, decision?: Decision): Promise<void>;
  undo(key: string, cost: number, algorithm: Algorithm | undefined, decision?: Decision): Promise<void>;
  async undo(key: string, cost = 1, algorithmOrDecision?: Algorithm | Decision, decision?: Decision): Promise<void> {
    const core = this.#core;
    const earlier = parseEarlierCharge(core, { key, cost, algorithmOrDecision, decision }, 'limiter.undo.decision');
    const charge = core.chargeOf(key, cost, earlier.algorithm);
    if (earlier.decision === undefined) return core.giveBack(charge);
    if (!earlier.decision.allowed || earlier.decision.reason !== undefined) return;
    await core.giveBack(charge, chargedOf(earlier.decision));
  }

  /**
   * Settles a request's charge at its real cost once its work is done: `cost` is what `consume`
   * charged, `decision` what it returned, `actualCost` (0 or more) what the request really cost. The
   * difference is given back (as by {@link undo}) or charged (never denied, never past `maxDebt`: a
   * token bucket in debt makes later requests wait `debt / rate`) in one store call, in the window the
   * request was charged in. Once per decision: again, or after an `undo`, it is ignored (warning
   * `RL_ALREADY_SETTLED`); a decision that charged nothing settles nothing. Rejects with
   * `InvalidCostError` for a bad `actualCost`, `UnsupportedError` for a concurrency limit or a store
   * without `capabilities.settle`. A charge whose call chose its algorithm (`consume(key, cost, {
   * algorithm })`) is settled with `{ decision, algorithm }`.
   */
  async settle(key: string, cost: number, actualCost: number, decision: Decision | ChargedWith): Promise<void> {
    const core = this.#core;
    const args = isDecisionLike(decision)
      ? { key, cost, algorithmOrDecision: decision, decision: undefined }
      : {
          key,
          cost,
          algorithmOrDecision: (decision as ChargedWith | null)?.algorithm,
          decision: (decision as ChargedWith | null)?.decision,
        };
    const earlier = parseEarlierCharge(core, args, 'limiter.settle.decision', true);
    checkActualCost(actualCost);
    if (this.isConcurrencyLimit)
      throw new UnsupportedError(
        'limiter.settle() is for rate limits: a concurrency limit holds permits, not units to settle.',
      );
    requireCapability(this.store, 'settle', 'limiter.settle()');
    await core.settle(core.chargeOf(key, cost, earlier.algorithm), chargedOf(earlier.decision!), actualCost).done;
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
      checkKey(key);
      if (!this.isConcurrencyLimit) {
        throw new UnsupportedError(
          `limiter.acquire(key) is for concurrency limits; this limiter is a ${this.algorithm?.kind ?? 'rate'} limit: call consume(key, cost).`,
        );
      }
      return promised(this.#core.acquire(key));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The charge of a rate call: its options (`at`) parsed, its key, cost and algorithm checked, its idempotency made. */
  #charge(key: string, cost: number, options: unknown, at: OptionsAt): Charge {
    const core = this.#core;
    const { algorithm, idempotency } = chargeOptionsOf(core, options, cost, at);
    const charge = core.chargeOf(key, cost, rateCall(core, key, cost, algorithm));
    return idempotency === undefined ? charge : { ...charge, idempotency };
  }

  /**
   * An operator's control on `key`: `calls` (one per state layout it goes through: see
   * `CallAlgorithms`) as one call of `LimiterCore.operate`, so one timeout and, when some fail, one
   * failure reported (a `'storeError'` event), whatever the number of layouts.
   */
  async #control(key: string, what: 'reset' | 'ban' | 'unban', calls: readonly StoreControl[]): Promise<void> {
    await this.#core.operate(key, what, (storeKey, now) => {
      const pending: Promise<void>[] = [];
      for (const call of calls) {
        let done: MaybePromise<void>;
        try {
          done = call(storeKey, now);
        } catch (error) {
          // The control fails with this error; the calls already made are not left to reject unheard.
          for (const other of pending) other.catch(() => undefined);
          throw error;
        }
        if (done instanceof Promise) pending.push(done);
      }
      return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
    });
  }

  /** Throws unless the limiter checks bans (option `bans`, or `blockDuration`) on a store that holds them. */
  #checkBans(verb: string): void {
    if (!this.#core.bans) {
      throw new UnsupportedError(
        `${verb}() needs a limiter that checks bans: create it with bans: true (each decision then reads the key's ban in the same store step), or with blockDuration.`,
      );
    }
  }
}

/** One store call of an operator's control, on one state layout (see `Limiter.#control`). */
type StoreControl = (storeKey: string, now: number | undefined) => MaybePromise<void>;

/** Creates a {@link Limiter}; throws {@link InvalidOptionError} for bad options. */
export function createLimiter(options: LimiterOptions): Limiter {
  return new Limiter(options);
}
