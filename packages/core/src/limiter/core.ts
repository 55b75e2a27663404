import type { Algorithm, ConcurrencyAlgorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { emitWarning } from '../runtime.js';
import { errorDocsUrl, InvalidAlgorithmError } from '../errors.js';
import { Observation } from '../observe/observation.js';
import type { HoldEvent, Observer } from '../observe/observer.js';
import type { ObservedAs } from '../observe/observation.js';
import type { Charge, Charged, MaybePromise, Store } from '../store/interface.js';
import type { Timers } from '../timers.js';
import { CallAlgorithms } from './call-algorithms.js';
import {
  composeStages,
  withoutStore,
  type ChargeAnswer,
  type ChargeNext,
  type ChargeStage,
  type StoreCall,
} from './charge-path.js';
import { circuitsOf, type Circuit, type FailureReason } from './circuit.js';
import { isChargeableCost } from './call-input.js';
import { Deadlines } from './deadlines.js';
import { denyCacheStage, type DenyCache } from './deny-cache.js';
import { storeErrorEvent, type LimiterEvents, type StoreErrorEvent } from './events.js';
import { BLOCK, FailurePolicy, type Fallback } from './failure-policy.js';
import { LeaseIds, type LeaseDecision } from './lease.js';
import { observationStage } from './observed-charges.js';
import type { LimiterConfig } from './options.js';
import { QuotaLeases } from './quota-leases.js';
import { isSettled, settleOnce } from './receipt.js';
import { StoreGuard } from './store-guard.js';

/** What {@link LimiterCore.settle} did: `first` when this settle was the charge's first (a later one is ignored), and the store's work. */
export interface Settling {
  readonly first: boolean;
  readonly done: MaybePromise<void>;
}

const IGNORED: Settling = Object.freeze({ first: false, done: undefined });
const SETTLED_AS_ESTIMATED: Settling = Object.freeze({ first: true, done: undefined });

/**
 * The one charge path of a limiter, beneath every verb (the engine, a fallback's decisions, `Limiter`).
 * Nothing is validated here (keys, costs and per-call algorithms were checked). A charge is a
 * {@link Charge} record (storage key, algorithm, cost; a reservation's `maxDelayMs`; an idempotent
 * charge) that goes down the stages of the path, composed once from the limiter's options, each
 * present only when used: observation, quota leases, the deny cache, the guard (circuit, timeout,
 * failure policy), and the store; it comes back as a {@link ChargeAnswer}. Every method answers
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
  /** The algorithms calls bring, checked, and the state layouts a key may have. */
  readonly calls: CallAlgorithms;
  /** Quota leases (option `lease`), or undefined: a stage of the path, never part of a store's grouped charge. */
  readonly quota: QuotaLeases | undefined;
  /** The user's clock (undefined: the store's own decides). */
  private readonly clock: Clock | undefined;
  /** The clock of what the process measures (the user's clock, else `Date.now`): a reservation's slot, cached denials. */
  readonly localClock: Clock;
  /** `synchronous`, a rate limit of its own and one circuit: {@link fastDecision} may go straight to the store. */
  private readonly fastPath: boolean;
  private readonly circuit: Circuit;
  /** The deny cache (option `denyCache`), or undefined; a request's grouped charges use it from the engine (see {@link chargeGrouped}). */
  readonly denyCache: DenyCache | undefined;
  private readonly guard: StoreGuard;
  private readonly timers: Timers;
  /** `maxDebt` as configured; undefined: the charging algorithm's limit. */
  private readonly maxDebt: number | undefined;
  /** The warning of a second settle was given (once per limiter). */
  private settleWarned = false;
  /** The observers; undefined without any (then nothing is measured). */
  private observation: Observation | undefined;
  /** {@link observation} when some observer hears decisions; undefined otherwise (a decision then tells nobody, reads no clock). */
  private deciders: Observation | undefined;
  /** A request's charge path (see the class comment), composed again when an observer is added. */
  private path!: ChargeNext;
  /** A rate limit's share of a request's grouped call ({@link chargeGrouped}), composed again when an observer is added. */
  private groupedPath!: GroupedNext;
  /** The ids of this limiter's permits. */
  private readonly leaseIds = new LeaseIds();
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
    this.store = config.store;
    this.prefix = config.prefix;
    this.maxCost = config.maxCost;
    this.blockMs = config.blockMs;
    this.bans = config.bans;
    this.overrides = config.overrides;
    this.name = config.name;
    this.clock = config.clock;
    this.localClock = config.localClock;
    this.timers = config.timers;
    this.denyCache = config.denyCache;
    this.idempotency = config.idempotency;
    this.maxDebt = config.maxDebt;
    this.keyPrefix = config.prefix ? `${config.prefix}:` : '';
    this.calls = new CallAlgorithms(config);
    const { circuit, byDomain } = circuitsOf(config, (open, reason, domain) =>
      this.circuitChanged(open, reason, domain),
    );
    this.circuit = circuit;
    const owner = {
      clock: config.localClock,
      retryIntervalMs: config.retryIntervalMs,
      keyPrefixLength: this.keyPrefix.length,
    };
    const policy = new FailurePolicy(action, owner, fallback?.answer);
    const deadlines = config.timeoutMs > 0 ? new Deadlines(config.timeoutMs, config.timers) : undefined;
    const report = (error: unknown, key: string, a: StoreErrorEvent['action']): void => this.storeFailed(error, key, a);
    this.guard = new StoreGuard(config.store, {
      clock: config.clock,
      circuits: { circuit, byDomain },
      deadlines,
      policy,
      report,
    });
    this.synchronous = config.store.capabilities.local && (fallback === undefined || fallback.synchronous);
    this.quota = config.lease === undefined ? undefined : this.quotaLeases(config);
    this.fastPath =
      this.synchronous &&
      config.algorithm !== undefined &&
      !this.isConcurrencyLimit &&
      byDomain === undefined &&
      this.quota === undefined;
    this.compose();
    config.denyCache?.followResets(config.store);
  }

  /**
   * The consume of `cost` under the limiter's own algorithm, by the store itself in the common case (a
   * synchronous rate limiter, its circuit closed, `key` and `cost` good); else undefined (the full
   * path). Observers of decisions hear it here as the observation stage would tell it (see
   * {@link observedDecision}).
   */
  fastDecision(key: unknown, cost: unknown): Decision | undefined {
    if (
      !this.fastPath ||
      typeof key !== 'string' ||
      key.length === 0 ||
      !isChargeableCost(cost, this.maxCost) ||
      !this.circuit.isClosed
    )
      return undefined;
    const charge = this.chargeOf(key, cost, this.algorithm!);
    if (this.deciders !== undefined) return this.observedDecision(charge, this.deciders);
    // The clock is read before the store is called: its error (a time that is not finite) is thrown as it is.
    const now = this.clock === undefined ? undefined : this.clock();
    try {
      return (this.store.charge(charge, now) as Charged).decision;
    } catch (error) {
      // Synchronous here: a synchronous limiter's fallback is local.
      return this.guard.threw(error, charge) as Decision;
    }
  }

  /** {@link fastDecision}'s store call with `observation` told its answer: timed when an observer reads durations, the failure policy's decision untimed. */
  private observedDecision(charge: Charge, observation: Observation): Decision {
    const timers = observation.wantsDurations ? this.timers : undefined;
    const startedAt = timers === undefined ? 0 : timers.now();
    const now = this.clock === undefined ? undefined : this.clock();
    let charged: Charged;
    try {
      charged = this.store.charge(charge, now) as Charged;
    } catch (error) {
      const decision = this.guard.threw(error, charge) as Decision;
      observation.decision(withoutStore(decision), charge.cost, undefined, charge.key);
      return decision;
    }
    const storeMs = timers === undefined ? undefined : timers.now() - startedAt;
    observation.decision(charged, charge.cost, storeMs, charge.key);
    return charged.decision;
  }

  /** Whether a promise-returning consume may be answered by {@link fastDecision} (no deny cache to consult). */
  get fastConsume(): boolean {
    return this.fastPath && this.denyCache === undefined;
  }

  /**
   * The record of a consume of `cost` units of the user's `key` under `algorithm` (every field present,
   * so every charge has one shape), with the storage key's parts: the store may find the key by the
   * caller's own string (see `Charge.scope`).
   */
  chargeOf(key: string, cost: number, algorithm: Algorithm): Charge {
    return {
      key: this.storeKeyOf(key),
      scope: this.keyPrefix,
      local: key,
      algorithm,
      cost,
      maxDelayMs: undefined,
      idempotency: undefined,
      enforced: undefined,
    };
  }

  /** The answer to `charge` down the limiter's charge path. */
  charge(charge: Charge): MaybePromise<ChargeAnswer> {
    return this.path(charge);
  }

  /**
   * The answer to `charge`, a rate limit's share of a request's grouped call (`Store.chargeAll`): the
   * path without quota leases (a limit with them is never grouped) and without the deny cache (the
   * engine looks up every limit's cached denial before anything is charged, and has the cache remember
   * each denial as its answer comes: see {@link denyCache}), `call` in place of the store's own charge.
   */
  chargeGrouped(charge: Charge, call: StoreCall): MaybePromise<ChargeAnswer> {
    return this.groupedPath(charge, call);
  }

  /** The deny cache's denial of `charge` (`took: 'nothing'`), not yet told to the observers (see {@link told}); undefined when there is none. */
  cachedDenial(charge: Charge): ChargeAnswer | undefined {
    if (this.denyCache === undefined || charge.idempotency !== undefined) return undefined;
    const cached = this.denyCache.get(charge, this.localClock());
    return cached === undefined ? undefined : withoutStore(cached);
  }

  /** The observers hear `answer` to `charge`, made without the store (a cached denial the engine looked up). */
  told(charge: Charge, answer: ChargeAnswer): void {
    this.deciders?.decision(answer, charge.cost, undefined, charge.key);
  }

  /** Gives back what the quota leases hold; later charges go to the store. */
  close(): Promise<void> {
    return this.quota?.close() ?? Promise.resolve();
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
    const leaseId = this.leaseIds.next();
    const algorithm = this.algorithm as ConcurrencyAlgorithm;
    const observation = this.deciders;
    const timed = observation?.wantsDurations === true;
    const startedAt = timed ? this.timers.now() : 0;
    const leased = (decision: Decision): LeaseDecision => {
      observation?.decision(
        { decision, took: 'charged' },
        1,
        timed && decision.reason === undefined ? this.timers.now() - startedAt : undefined,
        storeKey,
      );
      return this.guard.lease(decision, storeKey, algorithm, leaseId);
    };
    const result = this.guard.acquire(storeKey, algorithm, leaseId);
    return result instanceof Promise ? result.then(leased) : leased(result);
  }

  /** The decision for `cost` units (0 allowed) under `algorithm`, recording nothing. */
  peek(key: string, cost: number, algorithm: Algorithm): MaybePromise<Decision> {
    return this.guard.peek(this.keyPrefix + key, algorithm, cost);
  }

  /**
   * Gives back `charge`'s units; with its answer `charged`, where it took them (its decision's `at` and
   * `delayMs`; spent from a quota lease: into its block while that lives; an idempotent charge's id
   * forgotten), and the charge is then settled; without, a rollback right after the charge. A replay
   * took nothing and gives back nothing (its original's record stays). Never rejects (see {@link freeing}).
   */
  giveBack(charge: Charge, charged?: ChargeAnswer): MaybePromise<void> {
    const { key: storeKey, scope, local, algorithm, cost } = charge;
    if (charged === undefined)
      return this.freeing(storeKey, this.guard.giveBack({ key: storeKey, scope, local, algorithm, cost }));
    const decision = charged.decision;
    // Once: a decision given back (or settled) already gives back nothing more.
    if (!settleOnce(decision)) return this.warnSettledTwice();
    if (charged.took === 'replayed') return;
    const idempotencyId = charged.idempotencyId;
    if (idempotencyId === undefined && this.quota?.refund(storeKey, cost, algorithm, decision) === 0) return;
    const delayMs = decision.delayMs > 0 ? decision.delayMs : undefined;
    return this.freeing(
      storeKey,
      this.guard.giveBack({
        key: storeKey,
        scope,
        local,
        algorithm,
        cost,
        chargedAt: decision.at,
        delayMs,
        idempotencyId,
      }),
    );
  }

  /** `back`, a call that may free units of `storeKey` (failures are `'storeError'` events): its cached denial is forgotten now and once it is done (one answered in between is stale). */
  private freeing(storeKey: string, back: MaybePromise<void>): MaybePromise<void> {
    const cache = this.denyCache;
    cache?.delete(storeKey);
    return cache === undefined || !(back instanceof Promise) ? back : back.then(() => cache.delete(storeKey));
  }

  /**
   * Settles `charge`, answered `charged`, at `actual` units: once (a second settle, or one after a
   * give-back, is ignored with the warning `RL_ALREADY_SETTLED`, once per limiter); nothing for a charge
   * that took nothing in the store (a denial, a decision with a `reason`, one its group gave back, a
   * replay). With quota leases a charge spent from a live block is settled into that block; otherwise
   * the store settles it (a leased charge has no record of its own: the difference is charged or given
   * back as a charge of its own). The store's ability to settle was checked when the verb or the
   * middleware was built.
   */
  settle(charge: Charge, charged: ChargeAnswer, actual: number): Settling {
    const { decision, took } = charged;
    if (!decision.allowed || decision.reason !== undefined || (took !== 'charged' && took !== 'leased')) return IGNORED;
    if (!settleOnce(decision)) {
      this.warnSettledTwice();
      return IGNORED;
    }
    const { key: storeKey, algorithm, cost } = charge;
    if (actual === cost) return SETTLED_AS_ESTIMATED;
    this.observation?.settled(cost, actual);
    // The change the store still has to make: for a charge spent from a quota lease's block, what the
    // block (while it lives) did not take: past what it has left, for a settle above the estimate.
    const change =
      took === 'leased' && this.quota !== undefined
        ? this.quota.refund(storeKey, cost - actual, algorithm, decision)
        : cost - actual;
    if (change === 0) return SETTLED_AS_ESTIMATED;
    const { at: chargedAt, delayMs } = decision;
    const maxDebt = this.maxDebt ?? algorithm.limit;
    // Spent from a quota lease's block, the store holds the block, not this charge: the settle is the
    // change alone. A charge the store made alone (above `units`, or with no block to take from) is
    // settled as it was charged.
    const units = took === 'leased' ? { cost: Math.max(0, change), actual: Math.max(0, -change) } : { cost, actual };
    return {
      first: true,
      done: this.freeing(storeKey, this.guard.settle(storeKey, algorithm, { ...units, chargedAt, delayMs, maxDebt })),
    };
  }

  private warnSettledTwice(): void {
    if (this.settleWarned) return;
    this.settleWarned = true;
    emitWarning(
      `A charge of limit "${this.name}" was settled or given back twice (or settled after it was given back): the second is ignored. Settle or undo each request once. (rl, warned once per limiter.) See ${errorDocsUrl('RL_ALREADY_SETTLED')}`,
      { code: 'RL_ALREADY_SETTLED' },
    );
  }

  /** The give-back of a reservation (or a shaper's consume) that will not be used: its units at its slot, the observers told (only them when its group gave it back). */
  cancel(charge: Charge, charged: ChargeAnswer): MaybePromise<void> {
    if (charged.took !== 'replayed') this.observation?.reservationCancelled(charge.cost);
    const tookUnits = charged.took === 'charged' || charged.took === 'leased';
    return !tookUnits || isSettled(charged.decision) ? undefined : this.giveBack(charge, charged);
  }

  /** An operator's store call on `key` (with its storage key and the clock's reading), with the timeout and failure report of `StoreGuard.control`; its cached denial forgotten, again once done (one answered meanwhile is stale). */
  async operate<T>(
    key: string,
    what: string,
    call: (storeKey: string, now: number | undefined) => MaybePromise<T>,
  ): Promise<T> {
    const storeKey = this.keyPrefix + key;
    this.denyCache?.delete(storeKey);
    const result = await this.guard.control(storeKey, what, (now) => call(storeKey, now));
    this.denyCache?.delete(storeKey);
    return result;
  }

  /** `value` when this rate limiter can decide a call with it, with its lockout (see `CallAlgorithms`); else `InvalidAlgorithmError` or `UnsupportedError`. */
  checkCallAlgorithm(value: unknown): Algorithm {
    if (value !== undefined && value === this.algorithm && !this.isConcurrencyLimit) return this.algorithm;
    if (this.isConcurrencyLimit)
      throw new InvalidAlgorithmError(value, 'a concurrency limit takes no algorithm per call');
    return this.calls.check(value);
  }

  /** Adds `observer` as `as` says (the limit's name in its events, the key in them, dry-run denials, the option's field in errors). */
  observe(observer: Observer, as: ObservedAs): void {
    const observation = this.observation ?? new Observation(this.keyPrefix.length);
    observation.add(observer, as);
    this.observation = observation;
    this.deciders = observation.hearsDecisions ? observation : undefined;
    this.compose();
  }

  /** A request the HTTP layer holds for this limit started, ended or was abandoned: the observers hear it. */
  hold(state: HoldEvent['state'], delayMs: number): void {
    this.observation?.hold(state, delayMs);
  }

  /** Composes the charge paths from what the limiter uses (see the class comment). */
  private compose(): void {
    // No stage for observers that hear no decisions (only store errors, circuits…): a decision costs them nothing.
    const observing = this.deciders === undefined ? [] : [observationStage(this.deciders, this.timers)];
    const cache = this.denyCache;
    const stages: ChargeStage[] = [...observing];
    if (this.quota !== undefined) stages.push(this.quota.stage);
    if (cache !== undefined) stages.push(denyCacheStage(cache, this.localClock));
    const guard = this.guard;
    this.path = composeStages(stages, (charge) => guard.charge(charge, guard.storeCharge));
    this.groupedPath = composeGrouped(observing, (charge, call) => guard.charge(charge, call));
  }

  /** The quota leases of option `lease`: a stage whose blocks go through the deny cache and the guard (no fallback), never observed as decisions. */
  private quotaLeases(config: LimiterConfig): QuotaLeases {
    const guard = this.guard;
    const cache = this.denyCache;
    const blockStages = cache === undefined ? [] : [denyCacheStage(cache, config.localClock)];
    return new QuotaLeases(config.lease!, {
      clock: config.localClock,
      timers: config.timers,
      retryIntervalMs: config.retryIntervalMs,
      blocks: composeStages(blockStages, (charge) => guard.charge(charge, guard.storeCharge, BLOCK)),
      withoutStore: (charge, reason) => guard.decideWithoutStore(charge, reason),
      giveBack: (back) => this.freeing(back.key, guard.giveBack(back)),
      counted: (action, units) => this.observation?.leaseUnits(action, units),
      deniesLocally: cache !== undefined,
      watchResets: config.store.watchResets?.bind(config.store),
    });
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

/** A grouped charge's way down: the charge, and where the guard sends it (the request's batch). */
type GroupedNext = (charge: Charge, call: StoreCall) => MaybePromise<ChargeAnswer>;

/**
 * `stages` (outermost first) in front of `last`, the guard of a grouped charge, composed once: `call`
 * is handed down to the guard past each stage. Without stages (no observer), `last` itself: a
 * member's charge then makes no closure.
 */
function composeGrouped(stages: readonly ChargeStage[], last: GroupedNext): GroupedNext {
  let next = last;
  for (let i = stages.length - 1; i >= 0; i--) {
    const stage = stages[i]!;
    const inner = next;
    next = (charge, call) => stage(charge, (c) => inner(c, call));
  }
  return next;
}
