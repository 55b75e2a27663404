import type { Algorithm, ConcurrencyAlgorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { InvalidAlgorithmError } from '../errors.js';
import { Observation } from '../observe/observation.js';
import type { HoldEvent, Observer } from '../observe/observer.js';
import { idempotencyIdOf, markSettled, tookNothing, wasNotAsked, wasReplayed, wasSettled } from '../store/charge-marks.js';
import type { IdempotentCharge, MaybePromise, Store } from '../store/interface.js';
import type { Timers } from '../timers.js';
import { CallAlgorithms } from './call-algorithms.js';
import { circuitsOf, type Circuit, type FailureReason } from './circuit.js';
import { isChargeableCost } from './call-input.js';
import { Deadlines } from './deadlines.js';
import type { DenyCache } from './deny-cache.js';
import { storeErrorEvent, type LimiterEvents, type StoreErrorEvent } from './events.js';
import { BLOCK, CHARGE, FailurePolicy, type Fallback } from './failure-policy.js';
import { newLeaseId, type LeaseDecision } from './lease.js';
import { QuotaLeases, type LeaseHost } from './quota-leases.js';
import type { LimiterConfig } from './options.js';
import { withCancel, type Reservation } from './reservation.js';
import { settleCharge, type SettleHost } from './settlement.js';
import { StoreGuard } from './store-guard.js';
import { idempotentOf } from './idempotency.js';

/**
 * The one charge path of a limiter, beneath every verb (the engine, a fallback's decisions, `Limiter`).
 * Nothing is validated here (keys, costs and per-call algorithms were checked). A charge is a consume
 * (from a quota lease, with one), or with `maxDelayMs` a reservation (as Go's `AllowN` is `reserveN(now,
 * n, 0)`): one path to the store, through the deny cache, the guard (circuit, timeout, failure policy)
 * and the observers. Keys given here are the user's (the prefix is added once). Every method answers
 * synchronously on a synchronous limiter.
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
  /** The key's ban (option `bans`, or a lockout) and override (option `overrides`) are checked with each decision. */
  readonly bans: boolean;
  readonly overrides: boolean;
  readonly name: string;
  /** How long and how many ids per key an idempotent charge's decision is remembered. */
  readonly idempotency: LimiterConfig['idempotency'];
  /** The user's clock (undefined: the store's own decides), and the clock of what the process measures. */
  private readonly clock: Clock | undefined;
  private readonly localClock: Clock;
  /** `synchronous`, a rate limit of its own and one circuit: {@link fastDecision} may go straight to the store. */
  private readonly fastPath: boolean;
  private readonly circuit: Circuit;
  private readonly denyCache: DenyCache | undefined;
  private readonly guard: StoreGuard;
  /** The algorithms calls bring, checked, and the state layouts a key may have. */
  readonly calls: CallAlgorithms;
  private readonly timers: Timers;
  /** Quota leases (option `lease`), or undefined: charges taken from them are made outside a store's request group. */
  readonly quota: QuotaLeases | undefined;
  private readonly settler: SettleHost;
  /** The observers; undefined without any (then nothing is measured). */
  private observation: Observation | undefined;
  /** The last key charged and its storage key: consecutive requests of one client reuse the string (and its hash) instead of building it again. */
  private lastKey = '';
  private lastStoreKey = '';

  /** `fallback`: how the limiter that stands in while the store fails answers (already checked against this one), and whether synchronously. */
  constructor(
    config: LimiterConfig,
    action: FailurePolicy['action'],
    fallback: { readonly answer: Fallback; readonly synchronous: boolean } | undefined,
    private readonly events: LimiterEvents,
  ) {
    this.algorithm = config.algorithm;
    this.isConcurrencyLimit = config.algorithm?.stateKind === 'leases';
    ({ store: this.store, prefix: this.prefix, maxCost: this.maxCost, blockMs: this.blockMs, bans: this.bans, overrides: this.overrides, name: this.name } = config);
    ({ clock: this.clock, localClock: this.localClock, timers: this.timers, denyCache: this.denyCache, idempotency: this.idempotency } = config);
    this.keyPrefix = config.prefix ? `${config.prefix}:` : '';
    this.calls = new CallAlgorithms(config.store, config.algorithm, config.blockMs, config.bans, config.overrides);
    const { circuit, byDomain } = circuitsOf(config, (open, reason, domain) => this.circuitChanged(open, reason, domain));
    this.circuit = circuit;
    const owner = { clock: config.localClock, retryIntervalMs: config.retryIntervalMs, keyPrefixLength: this.keyPrefix.length };
    const policy = new FailurePolicy(action, owner, fallback?.answer);
    const deadlines = config.timeoutMs > 0 ? new Deadlines(config.timeoutMs, config.timers) : undefined;
    this.guard = new StoreGuard(config.store, config.clock, { circuit: this.circuit, byDomain }, deadlines, policy, (error, key, a) => this.storeFailed(error, key, a));
    this.synchronous = config.store.capabilities.local && (fallback === undefined || fallback.synchronous);
    this.quota = config.lease === undefined ? undefined : new QuotaLeases(config.lease, this.leaseHost(config.retryIntervalMs));
    this.settler = {
      ...{ name: config.name, maxDebt: config.maxDebt, leased: this.quota !== undefined, warned: false, settles: config.store.capabilities.settle === true },
      refundIntoBlock: (storeKey, units, algorithm, decision) => this.quota!.refund(storeKey, units, algorithm, decision),
      settleStored: (storeKey, algorithm, settlement) => this.freeing(storeKey, this.guard.settle(storeKey, algorithm, settlement)),
      told: (estimate, actual) => this.observation?.settled(estimate, actual),
    };
    this.fastPath = this.synchronous && config.algorithm !== undefined && !this.isConcurrencyLimit && byDomain === undefined && this.quota === undefined;
    config.denyCache?.followResets(config.store);
  }

  /** The consume of `cost` under the limiter's own algorithm, by the store itself in the common case (a synchronous rate limiter, no observer, its circuit closed, `key` and `cost` good); else undefined (the full path). */
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

  /**
   * Charges `cost` units of `key` under `algorithm`: a consume (from a quota lease, with `lease`), or with `maxDelayMs` a reservation (its slot is the
   * store's); with `idempotency`, in the store whatever the lease, past the deny cache (a replay is the store's to find), its id kept for a give-back.
   */
  charge(key: string, cost: number, algorithm: Algorithm, maxDelayMs?: number, idempotency?: IdempotentCharge): MaybePromise<Decision> {
    const storeKey = this.storeKeyOf(key);
    if (idempotency !== undefined) return this.decide(storeKey, algorithm, cost, maxDelayMs, idempotency);
    if (this.quota !== undefined && maxDelayMs === undefined) return this.quota.charge(storeKey, cost, algorithm);
    return this.decide(storeKey, algorithm, cost, maxDelayMs, undefined);
  }

  /** Gives back what the quota leases hold; later charges go to the store. */
  close(): Promise<void> {
    return this.quota?.close() ?? Promise.resolve();
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
   * Gives back `cost` units charged under `algorithm` by `decision` (its `at` and `delayMs` say where; none: a rollback right after
   * the charge; spent from a quota lease: into its block while that lives), which is then settled; never rejects (see {@link freeing}).
   */
  undo(key: string, cost: number, algorithm: Algorithm, decision?: Decision): MaybePromise<void> {
    const storeKey = this.keyPrefix + key;
    if (decision !== undefined) markSettled(decision);
    // A replay took nothing: nothing to give back, and its original's record stays.
    if (decision !== undefined && wasReplayed(decision)) return;
    const id = decision === undefined ? undefined : idempotencyIdOf(decision);
    if (decision !== undefined && id === undefined && this.quota?.refund(storeKey, cost, algorithm, decision) === true) return;
    return this.freeing(storeKey, this.guard.undo(storeKey, algorithm, cost, decision?.at, decision !== undefined && decision.delayMs > 0 ? decision.delayMs : undefined, id));
  }

  /** `back`, a call that may free units of `storeKey` (failures are `'storeError'` events): its cached denial is forgotten now and once it is done (one answered in between is stale). */
  private freeing(storeKey: string, back: MaybePromise<void>): MaybePromise<void> {
    const cache = this.denyCache;
    cache?.delete(storeKey);
    return cache === undefined || !(back instanceof Promise) ? back : back.then(() => cache.delete(storeKey));
  }

  /** Settles the charge of `decision` (`cost` units of `key` under `algorithm`) at `actual` units (see {@link settleCharge}). */
  settle(key: string, cost: number, actual: number, algorithm: Algorithm, decision: Decision): MaybePromise<void> {
    return settleCharge(this.settler, this.keyPrefix + key, cost, actual, algorithm, decision);
  }

  /** The give-back of a reservation (or a shaper's consume) that will not be used: its units at its slot, the observers told (only them when its group gave it back). */
  cancel(key: string, cost: number, algorithm: Algorithm, decision: Decision): MaybePromise<void> {
    if (!wasReplayed(decision)) this.observation?.reservationCancelled(cost);
    return tookNothing(decision) || wasSettled(decision) ? undefined : this.undo(key, cost, algorithm, decision);
  }

  /** `decision` of a reservation with its `cancel()`: a give-back at the decision's time and slot, until the slot (local clock). */
  reservation(decision: Decision, key: string, cost: number, algorithm: Algorithm): Reservation {
    return withCancel(decision, this.localClock, () => this.cancel(key, cost, algorithm, decision));
  }

  /** The request of `decision` (admitted by the failure policy after a timeout) was not served after all: a late grant is given back. */
  notServed(decision: Decision): void {
    this.guard.notServed(decision);
  }

  /** An operator's store call on `key` (with its storage key and the clock's reading), with the timeout and failure report of `StoreGuard.control`; its cached denial forgotten, again once done (one answered meanwhile is stale). */
  async operate<T>(key: string, what: string, call: (storeKey: string, now: number | undefined) => MaybePromise<T>): Promise<T> {
    const storeKey = this.keyPrefix + key;
    this.denyCache?.delete(storeKey);
    const result = await this.guard.control(storeKey, what, (now) => call(storeKey, now));
    this.denyCache?.delete(storeKey);
    return result;
  }

  /** `value` when this rate limiter can decide a call with it, with its lockout (see `CallAlgorithms`); else `InvalidAlgorithmError` or `UnsupportedError`. */
  checkCallAlgorithm(value: unknown): Algorithm {
    if (value !== undefined && value === this.algorithm && !this.isConcurrencyLimit) return this.algorithm;
    if (this.isConcurrencyLimit) throw new InvalidAlgorithmError(value, 'a concurrency limit takes no algorithm per call');
    return this.calls.check(value);
  }

  /** Adds an observer under the limit name `limit`; `keys`: the key in its events; `dryRun`: denials are `dry_run_denied`; `field` names the option in errors. */
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
   * One decision from the store (or the deny cache, or the failure policy): an acquire when `extra` is a lease id, else a charge (idempotent when
   * `extra` is one). The observers hear it, with the store's time when the store answered it (no `reason`), measured here, from the call to its answer.
   */
  private decide(storeKey: string, algorithm: Algorithm, cost: number, maxDelayMs: number | undefined, extra: string | IdempotentCharge | undefined): MaybePromise<Decision> {
    const observation = this.observation;
    if (observation === undefined) return this.ask(storeKey, algorithm, cost, maxDelayMs, extra);
    const startedAt = this.timers.now();
    const result = this.ask(storeKey, algorithm, cost, maxDelayMs, extra);
    const told = (decision: Decision): Decision => {
      // A consume its group never asked is no decision of this limit.
      if (wasNotAsked(decision)) return decision;
      observation.decision(decision, cost, decision.reason === undefined ? this.timers.now() - startedAt : undefined, storeKey);
      return decision;
    };
    return result instanceof Promise ? result.then(told) : told(result);
  }

  /** The answer of the guard, or of the deny cache first for a charge; `extra` an acquire's lease id, or an idempotent charge; `op` BLOCK: a lease's block. */
  private ask(storeKey: string, algorithm: Algorithm, cost: number, maxDelayMs: number | undefined, extra: string | IdempotentCharge | undefined, op: typeof CHARGE | typeof BLOCK = CHARGE): MaybePromise<Decision> {
    if (typeof extra === 'string') return this.guard.acquire(storeKey, algorithm as ConcurrencyAlgorithm, extra);
    if (extra !== undefined) return idempotentOf(this.guard.charge(storeKey, algorithm, cost, maxDelayMs, undefined, CHARGE, extra), extra.id);
    const cache = this.denyCache;
    if (cache === undefined) return this.guard.charge(storeKey, algorithm, cost, maxDelayMs, undefined, op);
    // Taken before the store call: a denial is cached from the earliest time the store can have decided it.
    const askedAt = this.localClock();
    const cached = cache.get(storeKey, cost, askedAt, algorithm, maxDelayMs);
    if (cached !== undefined) return cached;
    // A store that answers later remembers its denial in the same step that settles the call (not after a reset heard meanwhile: see `DenyCache.generation`).
    const generation = cache.generation;
    const remember = (d: Decision): Decision => (cache.generation === generation ? cache.remember(storeKey, cost, d, askedAt, algorithm, maxDelayMs) : d);
    const result = this.guard.charge(storeKey, algorithm, cost, maxDelayMs, remember, op);
    return result instanceof Promise ? result : remember(result);
  }

  /** What the quota leases do through this core: blocks charged and given back on the one path, the observers told. */
  private leaseHost(retryIntervalMs: number): LeaseHost {
    return {
      ...{ clock: this.localClock, timers: this.timers, retryIntervalMs },
      takeBlock: (storeKey, algorithm, units) => this.ask(storeKey, algorithm, units, undefined, undefined, BLOCK),
      chargeAlone: (storeKey, algorithm, cost) => this.decide(storeKey, algorithm, cost, undefined, undefined),
      withoutStore: (storeKey, algorithm, cost, reason) => this.guard.decideWithoutStore(storeKey, algorithm, cost, reason),
      giveBack: (storeKey, algorithm, units, chargedAt) => this.freeing(storeKey, this.guard.undo(storeKey, algorithm, units, chargedAt)),
      told: (decision, cost, storeKey) => this.observation?.decision(decision, cost, undefined, storeKey),
      notServed: (decision) => this.guard.notServed(decision),
      counted: (action, units) => this.observation?.leaseUnits(action, units),
      watchResets: this.store.watchResets?.bind(this.store),
    };
  }

  private circuitChanged(open: boolean, reason: FailureReason | undefined, domain: string | undefined): void {
    this.events.circuit({ state: open ? 'open' : 'closed', reason, domain });
    this.observation?.circuit(open, reason, domain);
  }

  private storeFailed(error: unknown, key: string, action: StoreErrorEvent['action']): void {
    const event = storeErrorEvent(error, key, action);
    this.events.storeError(event);
    this.observation?.storeError(event.error, event.reason, action, key);
  }
}
