import { EventEmitter } from 'node:events';
import type { Algorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { InvalidKeyError, InvalidOptionError, StoreError, StoreTimeoutError, UnsupportedError } from '../errors.js';
import type { MaybePromise, Store } from '../store/interface.js';
import { Circuit, Circuits } from './circuit.js';
import { checkLimiterCost, isChargeableCost } from './cost.js';
import { Deadlines } from './deadlines.js';
import type { DenyCache } from './deny-cache.js';
import { ACQUIRE, CONSUME, FailurePolicy, PEEK, parseStoreErrorPolicy } from './failure-policy.js';
import { GuardedStore } from './guarded-store.js';
import { newLeaseId } from './lease-id.js';
import { parseLimiterOptions, type LeaseDecision, type LimiterOptions, type StoreErrorEvent } from './options.js';

/**
 * A limiter: one algorithm on one store, with a key namespace, a clock and a failure policy.
 * Options are parsed once here; `consume` does no option work per call. Every verb validates its input
 * once, then calls the store through the same guard ({@link GuardedStore}): the circuit's gate, the
 * timeout and the failure policy.
 *
 * Events: `'storeError'` ({@link StoreErrorEvent}) each time the store fails or times out.
 */
export class Limiter extends EventEmitter {
  readonly algorithm: Algorithm;
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

  /** @param within Internal: set when this limiter is built as another one's fallback (see {@link FallbackOf}). */
  constructor(options: LimiterOptions, within?: FallbackOf) {
    super();
    const name = within?.name ?? 'createLimiter';
    const c = parseLimiterOptions(options, name);
    this.algorithm = c.algorithm;
    this.store = c.store;
    this.prefix = c.prefix;
    this.keyPrefix = c.prefix ? `${c.prefix}:` : '';
    this.maxCost = c.maxCost;
    this.clock = c.clock;
    this.localClock = c.localClock;
    this.circuit = new Circuit(c.localClock, c.retryIntervalMs, c.failureThreshold);
    this.denyCache = c.denyCache;
    const owner = { algorithm: c.algorithm, maxCost: c.maxCost, retryIntervalMs: c.retryIntervalMs, keyPrefixLength: this.keyPrefix.length, clock: c.localClock };
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
    this.guarded = new GuardedStore(c.store, c.algorithm, c.clock, this.circuit, circuits, deadlines, policy, (error, key, action) => this.emitStoreError(error, key, action));
    this.synchronous = c.store.capabilities.local && (fallback === undefined || fallback.synchronous);
    // The fast path checks the one circuit: a store with failure domains takes the gated path.
    this.fastSync = this.synchronous && c.algorithm.stateKind !== 'leases' && !domains;
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
   */
  consume(key: string, cost = 1): Promise<Decision> {
    try {
      // A local store without a deny cache: the synchronous path, wrapped once.
      if (this.fastSync && this.denyCache === undefined) return Promise.resolve(this.consumeSync(key, cost));
      this.checkRate(key, cost);
      const result = this.consumeChecked(key, cost);
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
   * store is remote.
   */
  consumeSync(key: string, cost = 1): Decision {
    // The common case in a few comparisons: a good key and cost, the store up.
    if (this.fastSync && typeof key === 'string' && key.length > 0 && isChargeableCost(cost, this.maxCost) && this.circuit.isClosed) {
      const storeKey = this.keyPrefix + key;
      // The clock is read before the store is called: its error (a time that is not finite) is thrown as it is.
      const now = this.clock === undefined ? undefined : this.clock();
      try {
        return this.store.consume(storeKey, this.algorithm, cost, now) as Decision;
      } catch (error) {
        // Synchronous here: a synchronous limiter's fallback is local.
        return this.guarded.threw(error, storeKey, cost, CONSUME) as Decision;
      }
    }
    this.checkRate(key, cost);
    if (!this.synchronous) {
      throw new UnsupportedError('limiter.consumeSync() needs a local store such as MemoryStore (and a local fallback, if any); otherwise use await limiter.consume().');
    }
    return this.guarded.call(this.keyPrefix + key, cost, CONSUME, '') as Decision;
  }

  /** The decision for `cost` units (default 0: only the current state) without recording anything. */
  peek(key: string, cost = 0): Promise<Decision> {
    try {
      checkKey(key);
      checkLimiterCost(this, cost, true);
      const result = this.guarded.call(this.keyPrefix + key, cost, PEEK, '');
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
   * {@link InvalidKeyError} for a bad key. A cached denial of the key is forgotten.
   */
  async reset(key: string): Promise<void> {
    const storeKey = this.storageKey(key);
    this.denyCache?.delete(storeKey);
    await this.guarded.reset(storeKey);
    // Again once reset: a denial answered meanwhile, by a call sent before the reset, is stale.
    this.denyCache?.delete(storeKey);
  }

  /**
   * Gives back `cost` units admitted earlier for `key`: a rollback, or a request that should not count
   * after all (its response failed). Pass the request's `decision` (what `consume` returned) and the
   * store gives back only to the window it was charged in, never raising the balance above what it
   * would be had the request not been charged (a fixed window that rolled over keeps its new count; a
   * bucket gets the cost less what refilled since the charge); a decision that charged nothing in the
   * store (a denial, or one with a `reason`: the failure policy, the deny cache, a fallback) gives
   * nothing back. Without a decision: a rollback right after the charge. A cached denial of the key is
   * forgotten, so the units can be used at once. A lost give-back is reported as a `'storeError'` event.
   */
  async undo(key: string, cost = 1, decision?: Decision): Promise<void> {
    checkKey(key);
    checkLimiterCost(this, cost);
    if (decision === undefined) return this.undoChecked(key, cost);
    if (decision === null || typeof decision !== 'object' || typeof decision.at !== 'number') {
      throw new InvalidOptionError('limiter.undo.decision', decision, 'the decision that consume() returned for this request, or nothing');
    }
    if (!decision.allowed || decision.reason !== undefined) return;
    await this.undoChecked(key, cost, decision.at);
  }

  /**
   * Takes a permit of a concurrency limit. When `allowed`, call `release()` once the work is done
   * (extra calls do nothing); a permit never released expires after the algorithm's `lease`.
   */
  acquire(key: string): Promise<LeaseDecision> {
    try {
      checkKey(key);
      if (this.algorithm.stateKind !== 'leases') {
        throw new UnsupportedError(`limiter.acquire(key) is for concurrency limits; this limiter uses ${this.algorithm.kind}: call consume(key, cost).`);
      }
      const result = this.acquireChecked(key);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** @internal For the composition engine: `key` is a non-empty string and `cost` passed checkCost against this limiter (maxCost included); nothing is validated here. Synchronous when `synchronous`. */
  consumeChecked(key: string, cost: number): MaybePromise<Decision> {
    const storeKey = this.keyPrefix + key;
    const cache = this.denyCache;
    if (cache === undefined) return this.guarded.call(storeKey, cost, CONSUME, '');
    // Taken before the store call: a denial is cached from the earliest time the store can have decided it.
    const askedAt = this.localClock();
    const cached = cache.get(storeKey, cost, askedAt);
    if (cached !== undefined) return cached;
    // A store that answers later remembers its denial in the same step that settles the call.
    const result = this.guarded.call(storeKey, cost, CONSUME, '', (d) => cache.remember(storeKey, cost, d, askedAt));
    return result instanceof Promise ? result : cache.remember(storeKey, cost, result, askedAt);
  }

  /** @internal acquire() without validation; synchronous when `synchronous`. */
  acquireChecked(key: string): MaybePromise<LeaseDecision> {
    const storeKey = this.keyPrefix + key;
    const leaseId = newLeaseId();
    const guarded = this.guarded;
    const result = guarded.call(storeKey, 1, ACQUIRE, leaseId);
    return result instanceof Promise ? result.then((d) => guarded.lease(d, storeKey, leaseId)) : guarded.lease(result, storeKey, leaseId);
  }

  /**
   * @internal For the composition engine: the request of `decision` (this limiter's, admitted by the
   * failure policy after a timeout) was not served after all, so a late grant of the store is given back.
   */
  notServed(decision: Decision): void {
    this.guarded.notServed(decision);
  }

  /**
   * @internal undo() without validation, `chargedAt` the charge's {@link Decision.at} (absent: a
   * rollback right after it); never rejects (a failure is reported as a storeError event). The key's
   * cached denial is forgotten before the give-back and again once it is done (a denial answered in
   * between, by a call sent before it, is stale), so the freed units are not denied from the cache.
   */
  undoChecked(key: string, cost: number, chargedAt?: number): MaybePromise<void> {
    const storeKey = this.keyPrefix + key;
    const cache = this.denyCache;
    if (cache === undefined) return this.guarded.undo(storeKey, cost, chargedAt);
    cache.delete(storeKey);
    const back = this.guarded.undo(storeKey, cost, chargedAt);
    if (!(back instanceof Promise)) return back;
    return back.then(() => cache.delete(storeKey));
  }

  /** A valid key and cost for a rate limit, or the typed error (no state is touched). */
  private checkRate(key: string, cost: number): void {
    checkKey(key);
    checkLimiterCost(this, cost);
    if (this.algorithm.stateKind === 'leases') {
      throw new UnsupportedError('A concurrency limit is taken with limiter.acquire(key), which returns a decision with release().');
    }
  }

  private emitStoreError(error: unknown, key: string, action: StoreErrorEvent['action']): void {
    const err = error instanceof Error ? error : new StoreError(String(error));
    const event: StoreErrorEvent = { error: err, reason: err instanceof StoreTimeoutError ? 'timeout' : 'store-error', key, action };
    // Without listeners, 'storeError' is dropped (it is not the special 'error' event, so it never throws).
    if (this.listenerCount('storeError') > 0) this.emit('storeError', event);
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
