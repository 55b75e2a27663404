import { EventEmitter } from 'node:events';
import type { Algorithm } from '../algorithm.js';
import { withBlock } from '../algorithms/block.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { InvalidAlgorithmError, InvalidKeyError, InvalidOptionError, StoreError, StoreTimeoutError, UnsupportedError } from '../errors.js';
import type { MaybePromise, Store } from '../store/interface.js';
import { CallAlgorithms } from './call-algorithms.js';
import { Circuit, Circuits, type FailureReason } from './circuit.js';
import { checkLimiterCost, isChargeableCost } from './cost.js';
import { Deadlines } from './deadlines.js';
import type { DenyCache } from './deny-cache.js';
import { ACQUIRE, CONSUME, FailurePolicy, PEEK, RESERVE, parseStoreErrorPolicy } from './failure-policy.js';
import { GuardedStore } from './guarded-store.js';
import { newLeaseId } from './lease-id.js';
import { Observation, type ObserveOptions } from './observation.js';
import { cancelNothing, parseMaxDelay, type Reservation, type ReserveOptions } from './reservation.js';
import type { Observer } from '../observe/observer.js';
import type { Timers } from '../timers.js';
import { parseLimiterOptions, type CircuitChange, type LeaseDecision, type LimiterOptions, type StoreErrorEvent } from './options.js';

/**
 * A limiter: one algorithm on one store, with a key namespace, a clock and a failure policy.
 * Options are parsed once here; `consume` does no option work per call. Every verb validates its input
 * once, then calls the store through the same guard ({@link GuardedStore}): the circuit's gate, the
 * timeout and the failure policy.
 *
 * Events: `'storeError'` ({@link StoreErrorEvent}) each time the store fails or times out;
 * `'circuit'` ({@link CircuitChange}) when the store-down circuit (of a failure domain) opens or closes. An
 * observer (option `observer`, or {@link observe}) hears every decision, store error and circuit change.
 */
export class Limiter extends EventEmitter {
  /** The algorithm of calls that give none; undefined when every call gives its own (see {@link consume}). */
  readonly algorithm: Algorithm | undefined;
  /** True for a concurrency limit (taken with {@link acquire}); false for a rate limit. */
  readonly leases: boolean;
  readonly store: Store;
  readonly prefix: string;
  /** The largest cost this limiter charges (option `maxCost`, default the algorithm's `maxCost`). */
  readonly maxCost: number;
  /** True when decisions are synchronous (a local store, and a local fallback if any): {@link consumeSync} works. */
  readonly synchronous: boolean;
  private readonly keyPrefix: string;
  private readonly clock: Clock | undefined;
  private readonly localClock: Clock;
  /** `synchronous` and a rate limit: consumeSync may go straight to the store. */
  private readonly fastSync: boolean;
  private readonly circuit: Circuit;
  private readonly denyCache: DenyCache | undefined;
  private readonly guarded: GuardedStore;
  private readonly calls: CallAlgorithms;
  /** The lockout after a denial, in ms (option `blockDuration`; 0: none). */
  readonly blockMs: number;
  /** The limit's name in observer events (option `name`). */
  readonly name: string;
  private readonly timers: Timers;
  private readonly circuits: Circuits | undefined;
  /** The observers; undefined without any (then nothing is measured). */
  private observation: Observation | undefined;

  /** @param within Internal: set when this limiter is built as another one's fallback (see {@link FallbackOf}). */
  constructor(options: LimiterOptions, within?: FallbackOf) {
    super();
    const name = within?.name ?? 'createLimiter';
    const c = parseLimiterOptions(options, name);
    this.algorithm = c.algorithm;
    this.blockMs = c.blockMs;
    this.name = c.name;
    this.timers = c.timers;
    this.leases = c.algorithm?.stateKind === 'leases';
    this.store = c.store;
    this.calls = new CallAlgorithms(c.store, c.algorithm);
    this.prefix = c.prefix;
    this.keyPrefix = c.prefix ? `${c.prefix}:` : '';
    this.maxCost = c.maxCost;
    this.clock = c.clock;
    this.localClock = c.localClock;
    this.circuit = new Circuit(c.localClock, c.retryIntervalMs, c.failureThreshold);
    this.denyCache = c.denyCache;
    const owner = { leases: this.leases, maxCost: c.maxCost, retryIntervalMs: c.retryIntervalMs, keyPrefixLength: this.keyPrefix.length, clock: c.localClock };
    const parsed = parseStoreErrorPolicy(c.onStoreError, `${name}.onStoreError`);
    let fallback: Limiter | undefined;
    if (parsed.action === 'fallback') {
      fallback = parsed.fallback instanceof Limiter ? parsed.fallback : buildFallback(parsed.fallback, options, name, within);
      FailurePolicy.checkFallback(owner, fallback, parsed.fallback, name);
    }
    const deadlines = c.timeoutMs > 0 ? new Deadlines(c.timeoutMs, c.timers) : undefined;
    const policy = new FailurePolicy(parsed.action, owner, fallback);
    // A store with failure domains gets a circuit per domain; without, the one circuit (no lookup per call).
    const domains = typeof c.store.failureDomain === 'function';
    const circuits = domains ? new Circuits(c.localClock, c.retryIntervalMs, c.failureThreshold) : undefined;
    this.circuits = circuits;
    this.guarded = new GuardedStore(c.store, c.clock, this.circuit, circuits, deadlines, policy, (error, key, action) => this.emitStoreError(error, key, action));
    this.synchronous = c.store.capabilities.local && (fallback === undefined || fallback.synchronous);
    // The fast path checks the one circuit: a store with failure domains takes the gated path.
    this.fastSync = this.synchronous && c.algorithm !== undefined && !this.leases && !domains;
    // Circuit changes are rare: always heard, for the 'circuit' event and the observers.
    const onCircuit = (open: boolean, reason: FailureReason | undefined, domain: string | undefined): void => this.circuitChanged(open, reason, domain);
    this.circuit.listener = onCircuit;
    if (circuits !== undefined) circuits.listener = onCircuit;
    if (c.observer !== undefined) this.observe(c.observer, { keys: c.observeKeys }, `${name}.observer`);
  }

  /**
   * Adds an observer of this limiter's decisions, store errors and circuit changes (see
   * `Observer`). `options.name` names the limit in its events (default: the limiter's `name`);
   * `options.keys` puts the request's key in them (default false). Returns the limiter.
   */
  observe(observer: Observer, options: ObserveOptions = {}, field = 'limiter.observe.observer'): this {
    const observation = this.observation ?? new Observation(this.keyPrefix.length);
    observation.add(observer, options.name ?? this.name, options.keys === true, options.dryRun === true, field);
    this.observation = observation;
    return this;
  }

  /** The full storage key for a user key. Throws {@link InvalidKeyError} for an empty or non-string key. */
  storageKey(key: string): string {
    checkKey(key);
    return this.keyPrefix + key;
  }

  /**
   * Decides for one request of `cost` units (default 1) and records it when admitted.
   * Rejects with a {@link RateLimitError} for a bad key or cost, or a `clock` reading that is not a
   * finite number (`InvalidOptionError` on `createLimiter.clock`; no state changes); store failures
   * resolve according to `onStoreError`, never reject.
   *
   * `algorithm` decides this call with another rate algorithm than the limiter's (a plan or a quota
   * chosen per request). A key's state is kept per algorithm kind, whatever the configuration: when a
   * key's plan changes, its state carries over to the new configuration, balances clamped to its
   * capacity (never a fresh full quota). Rejects with `InvalidAlgorithmError` for a value that is not a
   * rate algorithm, `UnsupportedError` for a kind the store does not run, `CostExceedsCapacityError`
   * for a cost above its capacity; nothing is charged then.
   */
  consume(key: string, cost = 1, algorithm?: Algorithm): Promise<Decision> {
    try {
      // A local store without a deny cache: the synchronous path, wrapped once.
      if (algorithm === undefined && this.fastSync && this.denyCache === undefined && this.observation === undefined) return Promise.resolve(this.consumeSync(key, cost));
      const a = this.rateAlgorithm(algorithm);
      this.checkRate(key, cost, a);
      const result = this.consumeChecked(key, cost, a);
      return result instanceof Promise ? result : Promise.resolve(result);
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
   * store is remote. `algorithm`: as for {@link consume}.
   */
  consumeSync(key: string, cost = 1, algorithm?: Algorithm): Decision {
    // The common case in a few comparisons: a good key and cost, the store up.
    if (algorithm === undefined && this.fastSync && this.observation === undefined && typeof key === 'string' && key.length > 0 && isChargeableCost(cost, this.maxCost) && this.circuit.isClosed) {
      const storeKey = this.keyPrefix + key;
      // The clock is read before the store is called: its error (a time that is not finite) is thrown as it is.
      const now = this.clock === undefined ? undefined : this.clock();
      try {
        return this.store.consume(storeKey, this.algorithm!, cost, now) as Decision;
      } catch (error) {
        // Synchronous here: a synchronous limiter's fallback is local.
        return this.guarded.threw(error, storeKey, this.algorithm!, cost, CONSUME) as Decision;
      }
    }
    const a = this.rateAlgorithm(algorithm);
    this.checkRate(key, cost, a);
    if (!this.synchronous) {
      throw new UnsupportedError('limiter.consumeSync() needs a local store such as MemoryStore (and a local fallback, if any); otherwise use await limiter.consume().');
    }
    const storeKey = this.keyPrefix + key;
    if (this.observation === undefined) return this.guarded.call(storeKey, a, cost, CONSUME, '') as Decision;
    const startedAt = this.timers.now();
    return this.observed(startedAt, this.guarded.call(storeKey, a, cost, CONSUME, ''), cost, storeKey) as Decision;
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
      if (options === null || typeof options !== 'object') throw new InvalidOptionError('limiter.reserve.options', options, '{ maxDelay } (and optionally algorithm)');
      const a = this.rateAlgorithm(options.algorithm);
      this.checkRate(key, cost, a);
      const maxDelayMs = parseMaxDelay(options.maxDelay, a, 'limiter.reserve.maxDelay');
      if (this.store.capabilities.reservations !== true) {
        throw new UnsupportedError('This store does not run reservations: use a store whose capabilities include reservations, such as MemoryStore or RedisStore.');
      }
      const result = this.reserveChecked(key, cost, a, maxDelayMs);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * @internal reserve() without validation, for the composition engine: as {@link consumeChecked},
   * `maxDelayMs` from 0 to the algorithm's `maxReserveMs`, on a store that runs reservations.
   * Synchronous when `synchronous`.
   */
  reserveChecked(key: string, cost: number, algorithm: Algorithm, maxDelayMs: number): MaybePromise<Reservation> {
    const storeKey = this.keyPrefix + key;
    const startedAt = this.observation === undefined ? 0 : this.timers.now();
    const cache = this.denyCache;
    const askedAt = this.localClock();
    let result: MaybePromise<Decision> | undefined = cache?.get(storeKey, cost, askedAt, algorithm, maxDelayMs);
    if (result === undefined) {
      const remember = cache === undefined ? undefined : (d: Decision): Decision => cache.remember(storeKey, cost, d, askedAt, algorithm, maxDelayMs);
      result = this.guarded.call(storeKey, algorithm, cost, RESERVE, '', remember, maxDelayMs);
      if (!(result instanceof Promise) && remember !== undefined) result = remember(result);
    }
    if (this.observation !== undefined) result = this.observed(startedAt, result, cost, storeKey);
    return result instanceof Promise ? result.then((d) => this.reservation(d, key, cost, algorithm)) : this.reservation(result, key, cost, algorithm);
  }

  /** `decision` with its `cancel()`: a give-back at the decision's time and slot, until the slot (local clock). */
  private reservation(decision: Decision, key: string, cost: number, algorithm: Algorithm): Reservation {
    if (!decision.allowed || decision.reason !== undefined) return { ...decision, cancel: cancelNothing };
    const slotAt = this.localClock() + decision.delayMs;
    let cancelled = false;
    const cancel = async (): Promise<void> => {
      if (cancelled || this.localClock() > slotAt) return;
      cancelled = true;
      await this.cancelChecked(key, cost, algorithm, decision);
    };
    return { ...decision, cancel };
  }

  /**
   * @internal The give-back of a reservation (or a shaper's consume) that will not be used, whatever the
   * time: its units at its `at` and `delayMs` (`Store.undo`), through {@link undoChecked} (the deny
   * cache forgets the key); the observers hear a `reservationCancelled`.
   */
  cancelChecked(key: string, cost: number, algorithm: Algorithm, decision: Decision): MaybePromise<void> {
    this.observation?.reservationCancelled(cost);
    return this.undoChecked(key, cost, algorithm, decision.at, decision.delayMs);
  }

  /** The decision for `cost` units (default 0: only the current state) without recording anything; `algorithm` as for {@link consume}. */
  peek(key: string, cost = 0, algorithm?: Algorithm): Promise<Decision> {
    try {
      checkKey(key);
      const a = algorithm === undefined ? this.ownAlgorithm() : this.rateAlgorithm(algorithm);
      checkLimiterCost(this, cost, a, true);
      const result = this.guarded.call(this.keyPrefix + key, a, cost, PEEK, '');
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Forgets the key's state: its next request starts with the full quota. Resolves once the store has
   * done it. A store that fails or does not answer within the `timeout` makes it reject, after a
   * `'storeError'` event (action `'deny'`), with the `StoreError` or the `StoreTimeoutError`: the key
   * was not reset (as far as the limiter knows: a reset that timed out may still apply when the store
   * answers late), and the call never waits longer than the timeout. Rejects with
   * {@link InvalidKeyError} for a bad key. A limiter called with algorithms of several kinds (see
   * {@link consume}) forgets the key's state in each kind. A cached denial of the key is forgotten, and
   * a lockout (`blockDuration`) lifted.
   */
  async reset(key: string): Promise<void> {
    const storeKey = this.storageKey(key);
    this.denyCache?.delete(storeKey);
    const resets: MaybePromise<void>[] = [];
    // With its lockout, so that the reset lifts the block too.
    for (const algorithm of this.calls.layouts()) resets.push(this.guarded.reset(storeKey, this.blockOf(algorithm)));
    await Promise.all(resets);
    // Again once reset: a denial answered meanwhile, by a call sent before the reset, is stale.
    this.denyCache?.delete(storeKey);
  }

  /**
   * Gives back `cost` units admitted earlier for `key`: a rollback, or a request that should not count
   * after all (its response failed), under the algorithm it was charged with (`algorithm` as for
   * {@link consume}). Pass the request's `decision` (what `consume` returned; as the third argument
   * when the limiter's own algorithm charged it) and the store gives back only to the window it was
   * charged in, never raising the balance above what it would be had the request not been charged (a
   * fixed window that rolled over keeps its new count; a bucket gets the cost less what refilled since
   * the charge); a decision that charged nothing in the store (a denial, or one with a `reason`: the
   * failure policy, the deny cache, a fallback) gives nothing back. Without a decision: a rollback
   * right after the charge. A cached denial of the key is forgotten, so the freed units can be used at
   * once. A lost give-back is reported as a `'storeError'` event.
   */
  undo(key: string, cost?: number, decision?: Decision): Promise<void>;
  undo(key: string, cost: number, algorithm: Algorithm | undefined, decision?: Decision): Promise<void>;
  async undo(key: string, cost = 1, algorithmOrDecision?: Algorithm | Decision, decision?: Decision): Promise<void> {
    checkKey(key);
    // A decision has `allowed`; an algorithm has not.
    const given = isDecisionLike(algorithmOrDecision) ? algorithmOrDecision : decision;
    const algorithm = isDecisionLike(algorithmOrDecision) ? undefined : algorithmOrDecision;
    const a = algorithm === undefined ? this.ownAlgorithm() : this.rateAlgorithm(algorithm);
    checkLimiterCost(this, cost, a);
    if (given === undefined) return this.undoChecked(key, cost, a);
    if (given === null || typeof given !== 'object' || typeof given.at !== 'number') {
      throw new InvalidOptionError('limiter.undo.decision', given, 'the decision that consume() returned for this request, or nothing');
    }
    if (!given.allowed || given.reason !== undefined) return;
    await this.undoChecked(key, cost, a, given.at);
  }

  /**
   * Takes a permit of a concurrency limit. When `allowed`, call `release()` once the work is done
   * (extra calls do nothing); a permit never released expires after the algorithm's `lease`.
   */
  acquire(key: string): Promise<LeaseDecision> {
    try {
      checkKey(key);
      if (!this.leases) {
        throw new UnsupportedError(`limiter.acquire(key) is for concurrency limits; this limiter is a ${this.algorithm?.kind ?? 'rate'} limit: call consume(key, cost).`);
      }
      const result = this.acquireChecked(key);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * @internal For the composition engine: `key` is a non-empty string, `algorithm` (default the
   * limiter's own) passed {@link checkCallAlgorithm}, and `cost` passed checkLimiterCost against this
   * limiter and that algorithm; nothing is validated here. Synchronous when `synchronous`.
   */
  consumeChecked(key: string, cost: number, algorithm: Algorithm = this.algorithm!): MaybePromise<Decision> {
    const storeKey = this.keyPrefix + key;
    if (this.observation === undefined) return this.charge(storeKey, cost, algorithm);
    const startedAt = this.timers.now();
    return this.observed(startedAt, this.charge(storeKey, cost, algorithm), cost, storeKey);
  }

  /** A consume of `cost` under `algorithm`: from the deny cache, or through the guarded store. */
  private charge(storeKey: string, cost: number, algorithm: Algorithm): MaybePromise<Decision> {
    const cache = this.denyCache;
    if (cache === undefined) return this.guarded.call(storeKey, algorithm, cost, CONSUME, '');
    // Taken before the store call: a denial is cached from the earliest time the store can have decided it.
    const askedAt = this.localClock();
    const cached = cache.get(storeKey, cost, askedAt, algorithm);
    if (cached !== undefined) return cached;
    // A store that answers later remembers its denial in the same step that settles the call.
    const result = this.guarded.call(storeKey, algorithm, cost, CONSUME, '', (d) => cache.remember(storeKey, cost, d, askedAt, algorithm));
    return result instanceof Promise ? result : cache.remember(storeKey, cost, result, askedAt, algorithm);
  }

  /**
   * @internal `value` when this (rate) limiter can decide a call with it: see {@link consume} for what
   * it throws. Each algorithm object is checked once. With `blockDuration`, the algorithm with the
   * limiter's lockout (`withBlock`, derived once per algorithm object).
   */
  checkCallAlgorithm(value: unknown): Algorithm {
    if (value !== undefined && value === this.algorithm && !this.leases) return this.algorithm;
    if (this.leases) throw new InvalidAlgorithmError(value, 'a concurrency limit takes no algorithm per call');
    return this.blockOf(this.calls.check(value));
  }

  /** `algorithm` with this limiter's lockout, if it has one; an algorithm that carries its own needs a store that runs lockouts. */
  private blockOf(algorithm: Algorithm): Algorithm {
    if (this.blockMs > 0) return withBlock(algorithm, this.blockMs);
    if (algorithm.blockMs > 0 && this.store.capabilities.blocks !== true) {
      throw new UnsupportedError(`This store does not run lockouts (the ${algorithm.kind} algorithm has a block of ${algorithm.blockMs} ms): use a store whose capabilities include blocks, such as MemoryStore or RedisStore.`);
    }
    return algorithm;
  }

  /** @internal acquire() without validation; synchronous when `synchronous`. */
  acquireChecked(key: string): MaybePromise<LeaseDecision> {
    const storeKey = this.keyPrefix + key;
    const leaseId = newLeaseId();
    const guarded = this.guarded;
    const algorithm = this.algorithm!;
    let result = guarded.call(storeKey, algorithm, 1, ACQUIRE, leaseId);
    if (this.observation !== undefined) result = this.observed(this.timers.now(), result, 1, storeKey);
    return result instanceof Promise ? result.then((d) => guarded.lease(d, storeKey, algorithm, leaseId)) : guarded.lease(result, storeKey, algorithm, leaseId);
  }

  /**
   * Tells the observers of `result`, a decision of `cost` for `storeKey` asked at `startedAt` (the
   * timers' time): the store's call duration when the store answered it (no `reason`).
   */
  private observed(startedAt: number, result: MaybePromise<Decision>, cost: number, storeKey: string): MaybePromise<Decision> {
    if (result instanceof Promise) {
      return result.then((decision) => {
        this.observation?.decision(decision, cost, decision.reason === undefined ? this.timers.now() - startedAt : undefined, storeKey);
        return decision;
      });
    }
    this.observation?.decision(result, cost, result.reason === undefined ? this.timers.now() - startedAt : undefined, storeKey);
    return result;
  }

  /**
   * @internal For the composition engine: the request of `decision` (this limiter's, admitted by the
   * failure policy after a timeout) was not served after all, so a late grant of the store is given back.
   */
  notServed(decision: Decision): void {
    this.guarded.notServed(decision);
  }

  /**
   * @internal undo() without validation (`algorithm`: the one the units were charged with;
   * `chargedAt`: the charge's {@link Decision.at}, absent for a rollback right after it); never
   * rejects (a failure is reported as a storeError event). The key's cached denial is forgotten before
   * the give-back and again once it is done (a denial answered in between, by a call sent before it,
   * is stale), so the freed units are not denied from the cache.
   */
  undoChecked(key: string, cost: number, algorithm: Algorithm = this.algorithm!, chargedAt?: number, delayMs?: number): MaybePromise<void> {
    const storeKey = this.keyPrefix + key;
    const cache = this.denyCache;
    if (cache === undefined) return this.guarded.undo(storeKey, algorithm, cost, chargedAt, delayMs);
    cache.delete(storeKey);
    const back = this.guarded.undo(storeKey, algorithm, cost, chargedAt, delayMs);
    if (!(back instanceof Promise)) return back;
    return back.then(() => cache.delete(storeKey));
  }

  /** The limiter's own algorithm, or the typed error when every call must give one. */
  private ownAlgorithm(): Algorithm {
    if (this.algorithm === undefined) {
      throw new InvalidAlgorithmError(undefined, 'this limiter has no algorithm of its own (createLimiter without algorithm): pass one with each call');
    }
    return this.algorithm;
  }

  /** The algorithm of a rate call: the limiter's own, or `algorithm` checked. */
  private rateAlgorithm(algorithm: Algorithm | undefined): Algorithm {
    if (algorithm === undefined) {
      const own = this.ownAlgorithm();
      if (this.leases) throw new UnsupportedError('A concurrency limit is taken with limiter.acquire(key), which returns a decision with release().');
      return own;
    }
    return this.checkCallAlgorithm(algorithm);
  }

  /** A valid key and cost for a rate call under `algorithm`, or the typed error (no state is touched). */
  private checkRate(key: string, cost: number, algorithm: Algorithm): void {
    checkKey(key);
    checkLimiterCost(this, cost, algorithm);
  }

  private circuitChanged(open: boolean, reason: FailureReason | undefined, domain: string | undefined): void {
    if (this.listenerCount('circuit') > 0) this.emit('circuit', { state: open ? 'open' : 'closed', reason, domain } satisfies CircuitChange);
    this.observation?.circuit(open, reason, domain);
  }

  private emitStoreError(error: unknown, key: string, action: StoreErrorEvent['action']): void {
    const err = error instanceof Error ? error : new StoreError(String(error));
    const event: StoreErrorEvent = { error: err, reason: err instanceof StoreTimeoutError ? 'timeout' : 'store-error', key, action };
    // Without listeners, 'storeError' is dropped (it is not the special 'error' event, so it never throws).
    if (this.listenerCount('storeError') > 0) this.emit('storeError', event);
    this.observation?.storeError(err, event.reason, action, key);
  }
}

/**
 * @internal Where a fallback's options are built: the name of their field
 * (`createLimiter.onStoreError.fallback`, one more `.onStoreError.fallback` per level) and the options
 * of every limiter it stands in for, to refuse a fallback that refers back to one of them.
 */
export interface FallbackOf {
  readonly name: string;
  readonly ancestors: readonly object[];
}

/** The fallback limiter built from `given`, the fallback options found in the options `of` of the limiter named `name`. */
function buildFallback(given: LimiterOptions, of: LimiterOptions, name: string, within: FallbackOf | undefined): Limiter {
  const field = `${name}.onStoreError.fallback`;
  const ancestors = within === undefined ? [of] : [...within.ancestors, of];
  if (ancestors.includes(given)) {
    throw new InvalidOptionError(field, given, 'the options of a limiter other than the ones it stands in for (a fallback refers back to itself here: it would fall back forever)');
  }
  return new Limiter(given, { name: field, ancestors });
}

/** Creates a {@link Limiter}; throws {@link InvalidOptionError} for bad options. */
export function createLimiter(options: LimiterOptions): Limiter {
  return new Limiter(options);
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidKeyError(key);
}

/** Whether the third argument of `undo` is a decision (it has `allowed`) rather than an algorithm. */
function isDecisionLike(value: unknown): value is Decision {
  return value !== null && typeof value === 'object' && typeof (value as Decision).allowed === 'boolean';
}
