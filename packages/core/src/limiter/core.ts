import type { Algorithm, ConcurrencyAlgorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { InvalidAlgorithmError, StoreError, StoreTimeoutError } from '../errors.js';
import { Observation } from '../observe/observation.js';
import type { HoldEvent, Observer } from '../observe/observer.js';
import { tookNothing, wasNotAsked } from '../store/charge-marks.js';
import type { MaybePromise, Store } from '../store/interface.js';
import type { Timers } from '../timers.js';
import { CallAlgorithms } from './call-algorithms.js';
import { Circuit, Circuits, type FailureReason } from './circuit.js';
import { isChargeableCost } from './call-input.js';
import { Deadlines } from './deadlines.js';
import type { DenyCache } from './deny-cache.js';
import type { LimiterEvents, StoreErrorEvent } from './events.js';
import { ACQUIRE, CHARGE, FailurePolicy, type Fallback } from './failure-policy.js';
import { newLeaseId, type LeaseDecision } from './lease.js';
import type { LimiterConfig } from './options.js';
import { withCancel, type Reservation } from './reservation.js';
import { StoreGuard } from './store-guard.js';

/**
 * The one charge path of a limiter, beneath every verb: the engine, the failure policy (a fallback's
 * decisions) and the public `Limiter` all use it. Nothing is validated here: keys are non-empty
 * strings, costs passed the limiter's cost rule, an algorithm given per call passed
 * {@link checkCallAlgorithm}. A charge is a consume, or with `maxDelayMs` a reservation (as Go's
 * `AllowN` is `reserveN(now, n, 0)`): one path to the store either way, through the deny cache (for
 * a remote store), the guard (circuit, timeout, failure policy) and the observers. Keys given here are
 * the user's; the prefix is added once. Every method answers synchronously on a synchronous limiter.
 */
export class LimiterCore {
  /** The algorithm of calls that give none; undefined when every call gives its own. Carries the lockout. */
  readonly algorithm: Algorithm | undefined;
  readonly isConcurrencyLimit: boolean;
  readonly store: Store;
  readonly prefix: string;
  /** `prefix` and its `:` (empty without a prefix): prepended to every key. */
  readonly keyPrefix: string;
  readonly maxCost: number;
  /** True when decisions are synchronous: a local store, and a local fallback if any. */
  readonly synchronous: boolean;
  /** The lockout after a denial in ms (0: none). */
  readonly blockMs: number;
  readonly name: string;
  /** The user's clock, or undefined: the store's own decides. */
  private readonly clock: Clock | undefined;
  private readonly localClock: Clock;
  /** `synchronous`, a rate limit of its own and one circuit: {@link fastDecision} may go straight to the store. */
  private readonly fastPath: boolean;
  private readonly circuit: Circuit;
  private readonly denyCache: DenyCache | undefined;
  private readonly guard: StoreGuard;
  private readonly calls: CallAlgorithms;
  private readonly timers: Timers;
  /** The observers; undefined without any (then nothing is measured). */
  private observation: Observation | undefined;
  /** The last key charged and its storage key: consecutive requests of one client reuse the string (and its hash) instead of building it again. */
  private lastKey = '';
  private lastStoreKey = '';

  /** `fallback`: the core of the limiter that stands in while the store fails (already checked against this one). */
  constructor(
    config: LimiterConfig,
    action: FailurePolicy['action'],
    fallback: LimiterCore | undefined,
    private readonly events: LimiterEvents,
  ) {
    this.algorithm = config.algorithm;
    this.isConcurrencyLimit = config.algorithm?.stateKind === 'leases';
    this.store = config.store;
    this.prefix = config.prefix;
    this.keyPrefix = config.prefix ? `${config.prefix}:` : '';
    this.maxCost = config.maxCost;
    this.blockMs = config.blockMs;
    this.name = config.name;
    this.clock = config.clock;
    this.localClock = config.localClock;
    this.timers = config.timers;
    this.denyCache = config.denyCache;
    this.calls = new CallAlgorithms(config.store, config.algorithm, config.blockMs);
    this.circuit = new Circuit(config.localClock, config.retryIntervalMs, config.failureThreshold);
    // A store with failure domains gets a circuit per domain; without, the one circuit (no lookup per call).
    const byDomain = typeof config.store.failureDomain === 'function' ? new Circuits(config.localClock, config.retryIntervalMs, config.failureThreshold) : undefined;
    const onCircuit = (open: boolean, reason: FailureReason | undefined, domain: string | undefined): void => this.circuitChanged(open, reason, domain);
    this.circuit.listener = onCircuit;
    if (byDomain !== undefined) byDomain.listener = onCircuit;
    const owner = { clock: config.localClock, retryIntervalMs: config.retryIntervalMs, keyPrefixLength: this.keyPrefix.length };
    const policy = new FailurePolicy(action, owner, fallback === undefined ? undefined : fallbackOf(fallback));
    const deadlines = config.timeoutMs > 0 ? new Deadlines(config.timeoutMs, config.timers) : undefined;
    this.guard = new StoreGuard(config.store, config.clock, { circuit: this.circuit, byDomain }, deadlines, policy, (error, key, a) => this.storeFailed(error, key, a));
    this.synchronous = config.store.capabilities.local && (fallback === undefined || fallback.synchronous);
    this.fastPath = this.synchronous && config.algorithm !== undefined && !this.isConcurrencyLimit && byDomain === undefined;
    config.denyCache?.followResets(config.store);
  }

  /**
   * The consume of `cost` under the limiter's own algorithm, decided by the store itself in the
   * common case (a synchronous rate limiter, no observer, its circuit closed, `key` and `cost` good),
   * in a few comparisons; undefined when that case does not hold (the caller takes the full path).
   */
  fastDecision(key: unknown, cost: unknown): Decision | undefined {
    if (!this.fastPath || this.observation !== undefined || typeof key !== 'string' || key.length === 0 || !isChargeableCost(cost, this.maxCost) || !this.circuit.isClosed) return undefined;
    const storeKey = this.storeKeyOf(key);
    // The clock is read before the store is called: its error (a time that is not finite) is thrown as it is.
    const now = this.clock === undefined ? undefined : this.clock();
    try {
      return this.store.consume(storeKey, this.algorithm!, cost, now) as Decision;
    } catch (error) {
      // Synchronous here: a synchronous limiter's fallback is local.
      return this.guard.threw(error, storeKey, this.algorithm!, cost) as Decision;
    }
  }

  /** Whether a promise-returning consume may be answered by {@link fastDecision} (no deny cache to consult). */
  get fastConsume(): boolean {
    return this.fastPath && this.denyCache === undefined && this.observation === undefined;
  }

  /** Charges `cost` units of `key` under `algorithm`: a consume, or with `maxDelayMs` a reservation. */
  charge(key: string, cost: number, algorithm: Algorithm, maxDelayMs?: number): MaybePromise<Decision> {
    return this.decide(this.storeKeyOf(key), algorithm, cost, maxDelayMs, undefined);
  }

  /** The deny cache's denial of this charge (`maxDelayMs`: a reservation's), or undefined; `observe`: told as a charge's answer is. */
  cachedDenial(key: string, cost: number, algorithm: Algorithm, maxDelayMs: number | undefined, observe: boolean): Decision | undefined {
    const storeKey = this.storeKeyOf(key);
    const cached = this.denyCache?.get(storeKey, cost, this.localClock(), algorithm, maxDelayMs);
    if (cached !== undefined && observe) this.observation?.decision(cached, cost, undefined, storeKey);
    return cached;
  }

  /** `key` with the prefix: the storage key. */
  storeKeyOf(key: string): string {
    if (key === this.lastKey) return this.lastStoreKey;
    const storeKey = this.keyPrefix + key;
    this.lastKey = key;
    this.lastStoreKey = storeKey;
    return storeKey;
  }

  /** Takes a permit of this concurrency limit. */
  acquire(key: string): MaybePromise<LeaseDecision> {
    const storeKey = this.keyPrefix + key;
    const leaseId = newLeaseId();
    const algorithm = this.algorithm as ConcurrencyAlgorithm;
    const result = this.decide(storeKey, algorithm, 1, undefined, leaseId);
    const guard = this.guard;
    return result instanceof Promise ? result.then((d) => guard.lease(d, storeKey, algorithm, leaseId)) : guard.lease(result, storeKey, algorithm, leaseId);
  }

  /** The decision for `cost` units (0 allowed) under `algorithm`, recording nothing. */
  peek(key: string, cost: number, algorithm: Algorithm): MaybePromise<Decision> {
    return this.guard.peek(this.keyPrefix + key, algorithm, cost);
  }

  /**
   * Gives back `cost` units charged under `algorithm` (`chargedAt`: the charge's `Decision.at`,
   * absent for a rollback right after it; `delayMs`: a reservation's, for a cancel); never rejects (a
   * failure is reported as a `'storeError'` event). The key's cached denial is forgotten before the
   * give-back and again once it is done (a denial answered in between, by a call sent before it, is
   * stale), so the freed units are not denied from the cache.
   */
  undo(key: string, cost: number, algorithm: Algorithm, chargedAt?: number, delayMs?: number): MaybePromise<void> {
    const storeKey = this.keyPrefix + key;
    const cache = this.denyCache;
    if (cache === undefined) return this.guard.undo(storeKey, algorithm, cost, chargedAt, delayMs);
    cache.delete(storeKey);
    const back = this.guard.undo(storeKey, algorithm, cost, chargedAt, delayMs);
    if (!(back instanceof Promise)) return back;
    return back.then(() => cache.delete(storeKey));
  }

  /**
   * The give-back of a reservation (or a shaper's consume) that will not be used, whatever the time:
   * its units at its `at` and `delayMs`; the observers hear a `reservationCancelled`.
   */
  cancel(key: string, cost: number, algorithm: Algorithm, decision: Decision): MaybePromise<void> {
    this.observation?.reservationCancelled(cost);
    // Given back in its group's own step already (see `Store.group`): only the observers hear of it.
    return tookNothing(decision) ? undefined : this.undo(key, cost, algorithm, decision.at, decision.delayMs);
  }

  /** `decision` of a reservation with its `cancel()`: a give-back at the decision's time and slot, until the slot (local clock). */
  reservation(decision: Decision, key: string, cost: number, algorithm: Algorithm): Reservation {
    return withCancel(decision, this.localClock, () => this.cancel(key, cost, algorithm, decision));
  }

  /**
   * The request of `decision` (this limiter's, admitted by the failure policy after a timeout) was not
   * served after all (a later limit denied it, its client left): a late grant of the store is given back.
   */
  notServed(decision: Decision): void {
    this.guard.notServed(decision);
  }

  /**
   * Forgets `key`'s state in every state layout the limiter was called with, lifting its lockout, and
   * its cached denial (again once done: a denial answered meanwhile, by a call sent before, is stale).
   */
  async reset(key: string): Promise<void> {
    const storeKey = this.keyPrefix + key;
    this.denyCache?.delete(storeKey);
    const resets: MaybePromise<void>[] = [];
    for (const algorithm of this.calls.layouts()) resets.push(this.guard.reset(storeKey, algorithm));
    await Promise.all(resets);
    this.denyCache?.delete(storeKey);
  }

  /**
   * `value` when this (rate) limiter can decide a call with it, with the limiter's lockout: the
   * limiter's own algorithm, or one checked once per object (see `CallAlgorithms`). Throws
   * `InvalidAlgorithmError` or `UnsupportedError`; nothing is charged then.
   */
  checkCallAlgorithm(value: unknown): Algorithm {
    if (value !== undefined && value === this.algorithm && !this.isConcurrencyLimit) return this.algorithm;
    if (this.isConcurrencyLimit) throw new InvalidAlgorithmError(value, 'a concurrency limit takes no algorithm per call');
    return this.calls.check(value);
  }

  /**
   * Adds an observer under the limit name `limit`; `keys` puts the request's key in its events;
   * `dryRun`: this limit's denials are not enforced (a dry-run limit of the HTTP layer), so they are
   * `dry_run_denied`. `field` names the option in errors.
   */
  observe(observer: Observer, limit: string, keys: boolean, dryRun: boolean, field: string): void {
    const observation = this.observation ?? new Observation(this.keyPrefix.length);
    observation.add(observer, limit, keys, dryRun, field);
    this.observation = observation;
  }

  /** A request the HTTP layer holds for this limit started, ended or was abandoned: the observers hear it. */
  hold(state: HoldEvent['state'], delayMs: number): void {
    this.observation?.hold(state, delayMs);
  }

  /**
   * One decision from the store (or the deny cache, or the failure policy): an acquire when `leaseId`
   * is given, else a charge. The observers hear it, with the store's time when the store answered it
   * (no `reason`), measured here, from the call to its answer.
   */
  private decide(storeKey: string, algorithm: Algorithm, cost: number, maxDelayMs: number | undefined, leaseId: string | undefined): MaybePromise<Decision> {
    const observation = this.observation;
    if (observation === undefined) return this.ask(storeKey, algorithm, cost, maxDelayMs, leaseId);
    const startedAt = this.timers.now();
    const result = this.ask(storeKey, algorithm, cost, maxDelayMs, leaseId);
    const told = (decision: Decision): Decision => {
      // A consume its group never asked is no decision of this limit.
      if (wasNotAsked(decision)) return decision;
      observation.decision(decision, cost, decision.reason === undefined ? this.timers.now() - startedAt : undefined, storeKey);
      return decision;
    };
    return result instanceof Promise ? result.then(told) : told(result);
  }

  /** The answer of the guard, or of the deny cache first for a charge (a remote store's denials, remembered). */
  private ask(storeKey: string, algorithm: Algorithm, cost: number, maxDelayMs: number | undefined, leaseId: string | undefined): MaybePromise<Decision> {
    if (leaseId !== undefined) return this.guard.acquire(storeKey, algorithm as ConcurrencyAlgorithm, leaseId);
    const cache = this.denyCache;
    if (cache === undefined) return this.guard.charge(storeKey, algorithm, cost, maxDelayMs);
    // Taken before the store call: a denial is cached from the earliest time the store can have decided it.
    const askedAt = this.localClock();
    const cached = cache.get(storeKey, cost, askedAt, algorithm, maxDelayMs);
    if (cached !== undefined) return cached;
    // A store that answers later remembers its denial in the same step that settles the call.
    const remember = (d: Decision): Decision => cache.remember(storeKey, cost, d, askedAt, algorithm, maxDelayMs);
    const result = this.guard.charge(storeKey, algorithm, cost, maxDelayMs, remember);
    return result instanceof Promise ? result : remember(result);
  }

  private circuitChanged(open: boolean, reason: FailureReason | undefined, domain: string | undefined): void {
    this.events.circuit({ state: open ? 'open' : 'closed', reason, domain });
    this.observation?.circuit(open, reason, domain);
  }

  private storeFailed(error: unknown, key: string, action: StoreErrorEvent['action']): void {
    const err = error instanceof Error ? error : new StoreError(String(error));
    const event: StoreErrorEvent = { error: err, reason: err instanceof StoreTimeoutError ? 'timeout' : 'store-error', key, action };
    this.events.storeError(event);
    this.observation?.storeError(err, event.reason, action, key);
  }
}

/** How a fallback's core answers the failure policy (see `Fallback`): its own algorithm, its own permits. */
function fallbackOf(core: LimiterCore): Fallback {
  return (op, key, cost) => (op === CHARGE ? core.charge(key, cost, core.algorithm!) : op === ACQUIRE ? core.acquire(key) : core.peek(key, cost, core.algorithm!));
}

const cores = new WeakMap<object, LimiterCore>();

/** Ties `core` to the public limiter built over it (see {@link coreOf}). */
export function registerCore(limiter: object, core: LimiterCore): void {
  cores.set(limiter, core);
}

/** The core of a limiter from `createLimiter`; undefined for anything else. The engine's way in, not a public member. */
export function coreOf(limiter: unknown): LimiterCore | undefined {
  return typeof limiter === 'object' && limiter !== null ? cores.get(limiter) : undefined;
}
