import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import { checkCost, type Algorithm, type ConcurrencyAlgorithm } from './algorithm.js';
import { systemClock, type Clock } from './clock.js';
import { makeDecision, type Decision, type DecisionReason } from './decision.js';
import { parseDuration, type Duration } from './duration.js';
import { InvalidKeyError, InvalidOptionError, RateLimitError, StoreError, StoreTimeoutError, UnsupportedError } from './errors.js';
import { checkOptions, integerAtLeast } from './options.js';
import type { MaybePromise, Store } from './store.js';
import { systemTimers, type TimerHandle, type Timers } from './timers.js';

/** What to do when the store fails or times out. */
export type StoreErrorPolicy =
  /** Deny the request (fail closed). The HTTP layer answers 503 with Retry-After. */
  | 'deny'
  /** Admit the request (fail open). */
  | 'allow'
  /** Apply a local limiter instead while the store is failing, for example the shared limit divided by the number of instances. */
  | { fallback: Limiter | LimiterOptions };

export interface LimiterOptions {
  /** The algorithm, from `fixedWindow`, `slidingWindowLog`, `slidingWindowCounter`, `tokenBucket`, `leakyBucket` or `concurrency`. */
  algorithm: Algorithm;
  /** Where state lives: a `MemoryStore`, a `RedisStore`, or any {@link Store}. */
  store: Store;
  /** Time source in ms. When given, every decision uses it (also on Redis). When omitted, the store's own clock decides (Redis `TIME`). */
  clock?: Clock;
  /** Namespace prepended to every key (`<prefix>:<key>`), so that two limits on one store never share state. */
  prefix?: string;
  /** Longest wait for the store before the failure policy applies. Default: 50 ms for remote stores, none for local ones. `false` disables it. */
  timeout?: Duration | false;
  /** What to do when the store fails or times out. Default `'deny'` (fail closed; the HTTP layer answers 503 with Retry-After). */
  onStoreError?: StoreErrorPolicy;
  /**
   * Once the store says a key is denied for `retryAfterMs`, deny further requests of that key and at
   * least that cost locally until then, without calling the store. Default: on for remote stores,
   * off for local ones and for `countDenied` algorithms (where denied requests must be counted).
   * `{ maxKeys }` bounds its memory (default 10,000 keys).
   */
  denyCache?: boolean | { maxKeys?: number };
  /**
   * When `storeFailureThreshold` store calls have failed within this interval, skip the store for this
   * long and apply the policy directly (then one probe call at a time tries it again). Default 1 s.
   */
  storeRetryInterval?: Duration;
  /**
   * How many failed store calls within `storeRetryInterval` open the circuit (default 3). Below it,
   * only the failed call's own request gets the policy: a lone slow answer under load does not deny
   * every key for a second.
   */
  storeFailureThreshold?: number;
  /** Where the store timeout gets its time and its timer. Default: Node's timers; tests pass `FakeTimers` from `@rl/core/testing`. */
  timers?: Timers;
}

/** A decision of a concurrency limit; call `release()` exactly when the work ends (extra calls do nothing). */
export interface LeaseDecision extends Decision {
  release(): Promise<void>;
}

/** Payload of the limiter's `'storeError'` event. */
export interface StoreErrorEvent {
  error: Error;
  reason: Extract<DecisionReason, 'store-error' | 'timeout'>;
  key: string;
  /** What the limiter did: `'deny'`, `'allow'` or `'fallback'`. */
  action: 'deny' | 'allow' | 'fallback';
}

const LIMITER_OPTIONS = ['algorithm', 'store', 'clock', 'prefix', 'timeout', 'onStoreError', 'denyCache', 'storeRetryInterval', 'storeFailureThreshold', 'timers'] as const;
const STATE_KINDS = new Set(['numeric', 'log', 'leases']);
const STORE_DOWN_RETRY_MS = 1000;

interface DenyEntry {
  until: number;
  cost: number;
  decision: Decision;
}

/**
 * A limiter: one algorithm on one store, with a key namespace, a clock and a failure policy.
 * Options are parsed once here; `consume` does no option work per call.
 *
 * Events: `'storeError'` ({@link StoreErrorEvent}) each time the store fails or times out.
 */
export class Limiter extends EventEmitter {
  readonly algorithm: Algorithm;
  readonly store: Store;
  readonly prefix: string;
  private readonly keyPrefix: string;
  private readonly clock: Clock | undefined;
  private readonly localClock: Clock;
  private readonly timeoutMs: number;
  private readonly policyAction: 'deny' | 'allow' | 'fallback';
  private readonly fallback: Limiter | undefined;
  private readonly denyCache: Map<string, DenyEntry> | undefined;
  private readonly denyCacheMax: number;
  private readonly retryIntervalMs: number;
  /**
   * The "store down" circuit. 0: closed (every call goes to the store). Otherwise the local time until
   * which calls skip the store and the failure policy applies directly; once it passes, one call goes to
   * the store as a probe (and moves this time on by `storeRetryInterval`, so a hung probe is replaced
   * by another): its success closes the circuit, its failure keeps it open.
   */
  /** True when decisions are synchronous (a local store, and a local fallback if any): {@link consumeSync} works. */
  readonly synchronous: boolean;
  /** `synchronous` and a rate limit: consumeSync may go straight to the store. */
  private readonly fastSync: boolean;
  private readonly maxCost: number;
  private storeDownUntil = 0;
  /** The reason of the failure that opened the circuit, repeated by the decisions taken while it is open. */
  private storeDownReason: 'store-error' | 'timeout' = 'store-error';
  private readonly failureThreshold: number;
  /** Local times of the latest failed store calls (at most `failureThreshold`), oldest first. */
  private readonly recentFailures: number[] = [];
  /** Deadlines of the store calls in flight, behind one timer. */
  private readonly deadlines: Deadlines | undefined;

  constructor(options: LimiterOptions) {
    super();
    const o = checkOptions(options, LIMITER_OPTIONS, 'createLimiter');
    const algorithm = o.algorithm as Algorithm;
    if (!algorithm || typeof algorithm !== 'object' || !STATE_KINDS.has((algorithm as Algorithm).stateKind)) {
      throw new InvalidOptionError('createLimiter.algorithm', o.algorithm, 'an algorithm such as tokenBucket({ capacity: 20, refillRate: 10 })');
    }
    const store = o.store as Store;
    if (!store || typeof store !== 'object' || typeof store.consume !== 'function' || !store.capabilities) {
      throw new InvalidOptionError('createLimiter.store', o.store, 'a store such as new MemoryStore()');
    }
    if (!store.capabilities.algorithms.includes(algorithm.kind)) {
      throw new UnsupportedError(`This store does not support the ${algorithm.kind} algorithm.`);
    }
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw new InvalidOptionError('createLimiter.clock', o.clock, 'a function returning the time in milliseconds');
    }
    if (o.prefix !== undefined && typeof o.prefix !== 'string') {
      throw new InvalidOptionError('createLimiter.prefix', o.prefix, 'a string');
    }
    this.algorithm = algorithm;
    this.store = store;
    this.prefix = (o.prefix as string | undefined) ?? '';
    this.keyPrefix = this.prefix ? `${this.prefix}:` : '';
    this.clock = o.clock as Clock | undefined;
    this.localClock = this.clock ?? systemClock;
    const local = store.capabilities.local;
    this.timeoutMs =
      o.timeout === false ? 0 : o.timeout === undefined ? (local ? 0 : 50) : parseDuration(o.timeout, 'createLimiter.timeout');
    this.retryIntervalMs =
      o.storeRetryInterval === undefined ? STORE_DOWN_RETRY_MS : parseDuration(o.storeRetryInterval, 'createLimiter.storeRetryInterval');
    this.failureThreshold =
      o.storeFailureThreshold === undefined ? 3 : integerAtLeast(o.storeFailureThreshold, 'createLimiter.storeFailureThreshold');
    const timers = o.timers === undefined ? systemTimers : checkTimers(o.timers, 'createLimiter.timers');
    this.deadlines = this.timeoutMs > 0 ? new Deadlines(this.timeoutMs, timers) : undefined;

    const policy = o.onStoreError ?? 'deny';
    if (policy === 'deny' || policy === 'allow') {
      this.policyAction = policy;
    } else if (policy && typeof policy === 'object' && 'fallback' in policy && Object.keys(policy).length === 1) {
      this.policyAction = 'fallback';
      const fb = (policy as { fallback: unknown }).fallback;
      this.fallback = fb instanceof Limiter ? fb : new Limiter(fb as LimiterOptions);
      if (this.fallback.algorithm.stateKind === 'leases' || algorithm.stateKind === 'leases') {
        if (this.fallback.algorithm.stateKind !== algorithm.stateKind) {
          throw new InvalidOptionError('createLimiter.onStoreError.fallback.algorithm', fb, 'the same kind of limit as the main one (a concurrency limit falls back to a concurrency limit)');
        }
      }
    } else {
      throw new InvalidOptionError('createLimiter.onStoreError', policy, "'deny', 'allow' or { fallback: <limiter options> }");
    }

    const cacheOption = o.denyCache;
    let cacheOn = !local && !algorithm.countDenied && algorithm.stateKind !== 'leases';
    this.denyCacheMax = 10_000;
    if (cacheOption === false) cacheOn = false;
    else if (cacheOption === true) cacheOn = !algorithm.countDenied && algorithm.stateKind !== 'leases';
    else if (cacheOption && typeof cacheOption === 'object') {
      const { maxKeys } = checkOptions(cacheOption, ['maxKeys'], 'createLimiter.denyCache');
      if (maxKeys !== undefined) this.denyCacheMax = integerAtLeast(maxKeys, 'createLimiter.denyCache.maxKeys');
      cacheOn = !algorithm.countDenied && algorithm.stateKind !== 'leases';
    } else if (cacheOption !== undefined) {
      throw new InvalidOptionError('createLimiter.denyCache', cacheOption, 'true, false or { maxKeys }');
    }
    this.denyCache = cacheOn ? new Map() : undefined;
    this.synchronous = local && (this.fallback === undefined || this.fallback.synchronous);
    this.fastSync = this.synchronous && algorithm.stateKind !== 'leases';
    this.maxCost = algorithm.maxCost;
  }

  /** The full storage key for a user key. Throws {@link InvalidKeyError} for an empty or non-string key. */
  storageKey(key: string): string {
    if (typeof key !== 'string' || key.length === 0) throw new InvalidKeyError(key);
    return this.keyPrefix + key;
  }

  /**
   * Decides for one request of `cost` units (default 1) and records it when admitted.
   * Rejects with a {@link RateLimitError} for a bad key or cost (no state changes); store failures
   * resolve according to `onStoreError`, never reject.
   */
  consume(key: string, cost = 1): Promise<Decision> {
    try {
      // A local store without a deny cache: the synchronous path, wrapped once.
      if (this.fastSync && this.denyCache === undefined) return Promise.resolve(this.consumeSync(key, cost));
      const storeKey = this.storageKey(key);
      checkCost(this.algorithm, cost);
      if (this.algorithm.stateKind === 'leases') {
        throw new UnsupportedError('A concurrency limit is taken with limiter.acquire(key), which returns a decision with release().');
      }
      const cache = this.denyCache;
      if (cache === undefined) {
        const result = this.run(storeKey, cost, 'consume');
        return result instanceof Promise ? result : Promise.resolve(result);
      }
      // Taken before the store call: a denial is cached from the earliest time the store can have decided it.
      const askedAt = this.localClock();
      const cached = this.fromDenyCache(cache, storeKey, cost, askedAt);
      if (cached !== undefined) return Promise.resolve(cached);
      // A store that answers later remembers its denial in the same step that settles the call.
      const result = this.run(storeKey, cost, 'consume', (d) => this.remember(cache, storeKey, cost, d, askedAt));
      if (result instanceof Promise) return result;
      return Promise.resolve(this.remember(cache, storeKey, cost, result, askedAt));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link consume} without a promise, for local stores (`store.capabilities.local`, such as the
   * `MemoryStore`), whose decisions are synchronous: the same decision, the same validation, the same
   * failure policy, without a promise and a microtask per call (and without the deny cache, which a
   * local store does not need). Throws a {@link RateLimitError} for a
   * bad key or cost (no state changes), and {@link UnsupportedError} for a remote store (use `consume`)
   * or a fallback whose own store is remote.
   */
  consumeSync(key: string, cost = 1): Decision {
    // The common case in a few comparisons: a good key and cost, the store up (NaN fails `cost > 0`).
    if (this.fastSync && typeof key === 'string' && key.length > 0 && typeof cost === 'number' && cost > 0 && cost <= this.maxCost && this.storeDownUntil === 0) {
      const storeKey = this.keyPrefix + key;
      try {
        return this.store.consume(storeKey, this.algorithm, cost, this.clock === undefined ? undefined : this.clock()) as Decision;
      } catch (error) {
        // Synchronous here: a synchronous limiter's fallback is local.
        return this.onStoreThrew(error, storeKey, cost, 'consume') as Decision;
      }
    }
    const storeKey = this.storageKey(key);
    checkCost(this.algorithm, cost);
    if (this.algorithm.stateKind === 'leases') {
      throw new UnsupportedError('A concurrency limit is taken with limiter.acquire(key), which returns a decision with release().');
    }
    if (!this.synchronous) {
      throw new UnsupportedError('limiter.consumeSync() needs a local store such as MemoryStore (and a local fallback, if any); otherwise use await limiter.consume().');
    }
    return this.run(storeKey, cost, 'consume') as Decision;
  }

  /** The decision for `cost` units (default 0: only the current state) without recording anything. */
  peek(key: string, cost = 0): Promise<Decision> {
    try {
      const storeKey = this.storageKey(key);
      checkCost(this.algorithm, cost, true);
      const result = this.run(storeKey, cost, 'peek');
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Forgets the key's state: its next request starts with the full quota. */
  async reset(key: string): Promise<void> {
    const storeKey = this.storageKey(key);
    this.denyCache?.delete(storeKey);
    await this.store.reset(storeKey, this.algorithm);
  }

  /** Gives back `cost` units admitted earlier for `key` (used to roll back combined limits). */
  async undo(key: string, cost = 1): Promise<void> {
    const storeKey = this.storageKey(key);
    checkCost(this.algorithm, cost);
    try {
      await this.withTimeout(this.store.undo(storeKey, this.algorithm, cost, this.clock?.()));
    } catch (error) {
      // A lost rollback errs on the safe side: the quota stays used until it recovers.
      this.emitStoreError(error, storeKey, 'deny');
    }
  }

  /**
   * Takes a permit of a concurrency limit. When `allowed`, call `release()` once the work is done
   * (extra calls do nothing); a permit never released expires after the algorithm's `lease`.
   */
  async acquire(key: string): Promise<LeaseDecision> {
    const storeKey = this.storageKey(key);
    const algorithm = this.algorithm;
    if (algorithm.stateKind !== 'leases') {
      throw new UnsupportedError(`limiter.acquire(key) is for concurrency limits; this limiter uses ${algorithm.kind}: call consume(key, cost).`);
    }
    const leaseId = newLeaseId();
    let decision: Decision;
    let fromStore = true;
    const gate = this.storeGate();
    if (gate === SKIP_STORE) {
      decision = await this.onFailure(undefined, storeKey, 1, 'consume', this.storeDownReason, leaseId);
      fromStore = false;
    } else {
      let pending: MaybePromise<Decision> | undefined;
      try {
        pending = this.store.acquire(storeKey, algorithm, leaseId, this.clock?.());
        decision = await this.withTimeout(pending);
        if (gate === PROBE_STORE) this.closeCircuit(undefined);
      } catch (error) {
        const timedOut = error instanceof StoreTimeoutError;
        if (timedOut && pending instanceof Promise) {
          // The store may still grant the permit after the timeout: give it back then, or it would be
          // held until its lease expires.
          pending.then(
            (late) => (late.allowed ? this.store.release(storeKey, algorithm, leaseId) : undefined),
            () => undefined,
          ).catch(() => undefined);
        }
        decision = await this.onFailure(error, storeKey, 1, 'consume', timedOut ? 'timeout' : 'store-error', leaseId);
        fromStore = false;
      }
    }
    let released = !decision.allowed;
    const release = async (): Promise<void> => {
      if (released) return;
      released = true;
      if (!fromStore) {
        if (decision.reason === 'fallback') await this.fallback!.store.release(this.fallback!.storageKey(key), this.fallback!.algorithm as ConcurrencyAlgorithm, leaseId);
        return;
      }
      try {
        await this.withTimeout(this.store.release(storeKey, algorithm, leaseId));
      } catch (error) {
        // The lease expires by itself; report and go on.
        this.emitStoreError(error, storeKey, 'deny');
      }
    };
    return { ...decision, release };
  }

  private fromDenyCache(cache: Map<string, DenyEntry>, storeKey: string, cost: number, now: number): Decision | undefined {
    const entry = cache.get(storeKey);
    if (entry === undefined || cost < entry.cost) return undefined;
    const wait = entry.until - now;
    if (wait <= 0) {
      cache.delete(storeKey);
      return undefined;
    }
    const d = entry.decision;
    const elapsed = d.retryAfterMs - wait;
    const decision = makeDecision(false, d.limit, d.remaining, Math.max(0, Math.ceil(d.resetMs - elapsed)), Math.ceil(wait), 0, d.policy);
    (decision as { reason?: DecisionReason }).reason = 'deny-cache';
    return decision;
  }

  private remember(cache: Map<string, DenyEntry>, storeKey: string, cost: number, decision: Decision, askedAt: number): Decision {
    if (!decision.allowed && decision.reason === undefined && decision.retryAfterMs > 0) {
      if (cache.size >= this.denyCacheMax) {
        // Drop the oldest entry (insertion order); entries are short-lived anyway.
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      cache.set(storeKey, { until: askedAt + decision.retryAfterMs, cost, decision });
    }
    return decision;
  }

  /**
   * Calls the store (with the timeout and failure policy); synchronous stores answer synchronously.
   * `after` is applied to the decision of a store that answers asynchronously (policy decisions
   * included), in the same step that settles the call; a synchronous answer is returned as it is.
   */
  private run(storeKey: string, cost: number, op: 'consume' | 'peek', after?: (decision: Decision) => Decision): MaybePromise<Decision> {
    const gate = this.storeDownUntil === 0 ? CALL_STORE : this.storeGate();
    if (gate === SKIP_STORE) return this.onFailure(undefined, storeKey, cost, op, this.storeDownReason);
    const now = this.clock === undefined ? undefined : this.clock();
    let result: MaybePromise<Decision>;
    try {
      result =
        op === 'consume'
          ? this.store.consume(storeKey, this.algorithm, cost, now)
          : this.store.peek(storeKey, this.algorithm, cost, now);
    } catch (error) {
      return this.onStoreThrew(error, storeKey, cost, op);
    }
    if (!(result instanceof Promise)) {
      if (gate === PROBE_STORE) this.closeCircuit(undefined);
      return result;
    }
    return this.settle(result, gate === PROBE_STORE, storeKey, cost, op, after);
  }

  /**
   * The answer of an asynchronous store call with the timeout and the failure policy, and `after`
   * applied to the final decision: one promise per call (on top of the store's), whatever happens. A
   * late answer after a timeout is dropped; a late rejection is handled, never unhandled.
   */
  private settle(
    result: Promise<Decision>,
    probe: boolean,
    storeKey: string,
    cost: number,
    op: 'consume' | 'peek',
    after: ((decision: Decision) => Decision) | undefined,
  ): Promise<Decision> {
    const answered = (decision: Decision): Decision => {
      if (probe) this.closeCircuit(undefined);
      return after === undefined ? decision : after(decision);
    };
    const failed = (error: unknown): MaybePromise<Decision> => {
      const decision = this.onFailure(error, storeKey, cost, op, error instanceof StoreTimeoutError ? 'timeout' : 'store-error');
      if (after === undefined) return decision;
      return decision instanceof Promise ? decision.then(after) : after(decision);
    };
    return this.deadlines === undefined ? result.then(answered, failed) : this.race(this.deadlines, result, answered, failed);
  }

  /** A store call threw synchronously: misuse errors (bad input, a closed store) propagate; store failures get the policy. */
  private onStoreThrew(error: unknown, storeKey: string, cost: number, op: 'consume' | 'peek'): MaybePromise<Decision> {
    if (error instanceof RateLimitError && error.code !== 'RL_STORE_ERROR') throw error;
    return this.onFailure(error, storeKey, cost, op, 'store-error');
  }

  /** Whether a call may go to the store now: always while the circuit is closed; one probe at a time while it is open. */
  private storeGate(): StoreGate {
    if (this.storeDownUntil === 0) return CALL_STORE;
    const now = this.localClock();
    if (this.storeDownUntil > now) return SKIP_STORE;
    this.storeDownUntil = now + this.retryIntervalMs;
    return PROBE_STORE;
  }

  /** A probe succeeded: the store is used again. */
  private readonly closeCircuit = <T>(value: T): T => {
    this.storeDownUntil = 0;
    this.recentFailures.length = 0;
    return value;
  };

  /** `value`, rejected with a {@link StoreTimeoutError} when it does not settle within the timeout. */
  private withTimeout<T>(value: MaybePromise<T>): Promise<T> {
    const deadlines = this.deadlines;
    if (deadlines === undefined || !(value instanceof Promise)) return Promise.resolve(value);
    return this.race(deadlines, value, (v) => v, rethrow);
  }

  /**
   * `value` against its deadline, in one promise: `onValue` handles the answer, `onError` a rejection
   * or the {@link StoreTimeoutError} of a deadline that passed first (whichever comes first wins; a
   * late answer or rejection is dropped, never unhandled). A handler that throws rejects the result.
   */
  private race<T, R>(deadlines: Deadlines, value: Promise<T>, onValue: (value: T) => MaybePromise<R>, onError: (error: unknown) => MaybePromise<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const settleWith = <V>(handle: (v: V) => MaybePromise<R>, v: V): void => {
        try {
          resolve(handle(v));
        } catch (error) {
          reject(error);
        }
      };
      const entry = deadlines.add((timeout) => settleWith(onError, timeout));
      value.then(
        (v) => {
          if (deadlines.answered(entry)) settleWith(onValue, v);
        },
        (error: unknown) => {
          if (deadlines.answered(entry)) settleWith(onError, error);
        },
      );
    });
  }

  /** Applies the failure policy. `error` is undefined when the store is known to be down (no call was made). */
  private onFailure(
    error: unknown,
    storeKey: string,
    cost: number,
    op: 'consume' | 'peek',
    reason: 'store-error' | 'timeout',
    leaseId?: string,
  ): MaybePromise<Decision> {
    if (error !== undefined) {
      const now = this.localClock();
      const failures = this.recentFailures;
      failures.push(now);
      if (failures.length > this.failureThreshold) failures.shift();
      // A failed probe (the circuit was open) keeps it open; otherwise it opens at the threshold.
      if (this.storeDownUntil !== 0 || (failures.length === this.failureThreshold && now - failures[0]! <= this.retryIntervalMs)) {
        this.storeDownUntil = now + this.retryIntervalMs;
        this.storeDownReason = reason;
      }
      this.emitStoreError(error, storeKey, this.policyAction);
    }
    const algorithm = this.algorithm;
    if (this.policyAction === 'fallback') {
      const fallback = this.fallback!;
      const userKey = storeKey.slice(this.keyPrefix.length);
      if (leaseId === undefined && op === 'consume' && fallback.store.capabilities.local) {
        // A local fallback answers synchronously (and keeps consumeSync synchronous).
        return { ...fallback.consumeSync(userKey, Math.min(cost, fallback.algorithm.maxCost)), reason: 'fallback' as const };
      }
      const local: Promise<Decision> =
        leaseId !== undefined
          ? Promise.resolve(fallback.store.acquire(fallback.storageKey(userKey), fallback.algorithm as ConcurrencyAlgorithm, leaseId, fallback.clock?.()))
          : op === 'consume'
            ? fallback.consume(userKey, Math.min(cost, fallback.algorithm.maxCost))
            : fallback.peek(userKey, Math.min(cost, fallback.algorithm.maxCost));
      return local.then((d) => ({ ...d, reason: 'fallback' as const }));
    }
    const allowed = this.policyAction === 'allow';
    const decision = makeDecision(allowed, algorithm.limit, allowed ? Math.max(0, Math.floor(algorithm.limit - cost)) : 0, 0, allowed ? 0 : this.retryIntervalMs, 0, algorithm.policy);
    (decision as { reason?: DecisionReason }).reason = reason;
    return decision;
  }

  private emitStoreError(error: unknown, key: string, action: StoreErrorEvent['action']): void {
    const err = error instanceof Error ? error : new StoreError(String(error));
    const event: StoreErrorEvent = { error: err, reason: err instanceof StoreTimeoutError ? 'timeout' : 'store-error', key, action };
    // Without listeners, 'storeError' is dropped (it is not the special 'error' event, so it never throws).
    if (this.listenerCount('storeError') > 0) this.emit('storeError', event);
  }
}

/** Creates a {@link Limiter}; throws {@link InvalidOptionError} for bad options. */
export function createLimiter(options: LimiterOptions): Limiter {
  return new Limiter(options);
}

const CALL_STORE = 0;
const PROBE_STORE = 1;
const SKIP_STORE = 2;
type StoreGate = typeof CALL_STORE | typeof PROBE_STORE | typeof SKIP_STORE;

interface Deadline {
  readonly at: number;
  /** Called once when the deadline passes unanswered; dropped as soon as the call is answered. */
  onTimeout: ((error: StoreTimeoutError) => void) | undefined;
  prev: Deadline | undefined;
  next: Deadline | undefined;
  /** In the list (not yet answered, not yet due). */
  linked: boolean;
}

/**
 * The timeouts of the store calls in flight. Every call has the same timeout, so deadlines come in
 * order: a FIFO list behind one timer replaces a `setTimeout`/`clearTimeout` pair per call. An
 * answered call leaves the list at once ({@link Deadlines.answered}): at thousands of calls per
 * second, keeping each call's entry and callbacks for the whole timeout would move them all to the
 * old generation of the heap, whose collection then costs more than the calls themselves.
 */
class Deadlines {
  private head: Deadline | undefined;
  private tail: Deadline | undefined;
  private timer: TimerHandle | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly timers: Timers,
  ) {}

  add(onTimeout: (error: StoreTimeoutError) => void): Deadline {
    const entry: Deadline = { at: this.timers.now() + this.timeoutMs, onTimeout, prev: this.tail, next: undefined, linked: true };
    if (this.tail === undefined) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
    if (this.timer === undefined) this.schedule(this.timeoutMs);
    return entry;
  }

  /** The call was answered in time: it can no longer time out. Returns false when it already did. */
  answered(entry: Deadline): boolean {
    if (entry.onTimeout === undefined) return false;
    entry.onTimeout = undefined;
    if (entry.linked) this.unlink(entry);
    return true;
  }

  private unlink(entry: Deadline): void {
    entry.linked = false;
    if (entry.prev === undefined) this.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
  }

  private schedule(ms: number): void {
    this.timer = this.timers.setTimeout(this.expire, Math.max(1, Math.ceil(ms)));
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = this.timers.now();
    const due: Deadline[] = [];
    while (this.head !== undefined && this.head.at <= now) {
      const entry = this.head;
      this.unlink(entry);
      due.push(entry);
    }
    if (this.head !== undefined) this.schedule(this.head.at - now);
    // Timers run before I/O in an event-loop turn: after a busy loop, answers may already wait in the
    // socket. Let one I/O phase run first, so only calls still unanswered time out.
    if (due.length > 0) setImmediate(() => this.timeOut(due));
  };

  private timeOut(due: Deadline[]): void {
    for (const entry of due) {
      const onTimeout = entry.onTimeout;
      if (onTimeout === undefined) continue;
      entry.onTimeout = undefined;
      onTimeout(new StoreTimeoutError(this.timeoutMs));
    }
  }
}

/** `value` as {@link Timers}, or an {@link InvalidOptionError} naming `field`. */
export function checkTimers(value: unknown, field: string): Timers {
  const t = value as Timers | null;
  if (t === null || typeof t !== 'object' || typeof t.now !== 'function' || typeof t.setTimeout !== 'function' || typeof t.clearTimeout !== 'function') {
    throw new InvalidOptionError(field, value, 'timers with now(), setTimeout(callback, ms) and clearTimeout(handle), such as FakeTimers from @rl/core/testing');
  }
  return t;
}

function rethrow(error: unknown): never {
  throw error;
}

let leaseCounter = 0;
const leasePrefix = randomBytes(6).toString('base64url');

/** A lease id unique across processes: a random process prefix and a counter. */
function newLeaseId(): string {
  leaseCounter = (leaseCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${leasePrefix}.${leaseCounter.toString(36)}`;
}
