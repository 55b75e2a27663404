import type { Algorithm } from '../algorithm.js';
import { makeDecision, type Decision, type DecisionReason } from '../decision.js';
import { InvalidOptionError } from '../errors.js';
import { checkOptions, integerAtLeast } from '../options.js';
import type { Charge, Store } from '../store/interface.js';
import { heldKey } from '../store/key-digest.js';
import { withoutStore, type ChargeAnswer, type ChargeStage } from './charge-path.js';

const DEFAULT_MAX_KEYS = 10_000;

interface DenyEntry {
  /** When the store was asked (local clock): a clock read before it (stepped back) finds no entry. */
  askedAt: number;
  /** Until when it is answered (local clock). */
  until: number;
  /** When its retry comes (local clock): `until`, or later for a denial decided under an override (kept shorter, see {@link OVERRIDE_DENIAL_MS}). */
  retryAt: number;
  /**
   * True for a denial decided by the limit's own configuration: it answers any charge of its cost or
   * more. One decided under an override answers its own cost only: a cost above the override's limit
   * is retried at the override's end, which may come before the retry of a smaller cost.
   */
  own: boolean;
  cost: number;
  decision: Decision;
  /** The configuration that denied (see {@link configurationOf}): a call with another one (a plan that changed) asks the store. */
  configuration: string;
  /** The `maxDelay` of a reservation's denial (`until` is then when such a reservation fits); undefined for a consume's. */
  maxDelay: number | undefined;
}

/**
 * The longest a denial decided under an override is kept (ms): the override may end sooner than the
 * denial's retry time (at its ttl, of which no notice comes); the key's flood then reaches the store
 * once a second per instance, and a request after the override's end is decided by the limit's own
 * algorithm within a second.
 */
export const OVERRIDE_DENIAL_MS = 1_000;

/**
 * Denials the store gave, kept locally until they expire: once the store says a key is denied for
 * `retryAfterMs`, requests of that key and at least that cost are denied without a store call until
 * then (reason `'deny-cache'`). Bounded to `maxKeys` keys, a long one held by its digest (`heldKey`:
 * 10,000 denied keys of 16 kB held whole took 165 MB); when full,
 * the oldest entry is dropped (entries are short-lived anyway). Times are the limiter's local clock,
 * in milliseconds; a clock read before a denial was asked (stepped back) finds none.
 */
export class DenyCache {
  private readonly entries = new Map<string, DenyEntry>();
  /** Called once, when the first denial is remembered (see {@link followResets}). */
  private firstDenial: (() => void) | undefined;
  /** What the store calls on a reset anywhere; held here because the store holds it weakly. */
  private resetListener: ((storageKey: string | undefined, hearing?: boolean) => void) | undefined;
  /** False while the store says it cannot hear resets (see {@link followResets}): nothing is answered or remembered. */
  private hearing = true;
  /**
   * How many times the store told of a reset (a key, or every key): a denial whose request was asked
   * before a reset was heard may be of the state before it, and is not remembered (see {@link generation}).
   */
  private heard = 0;

  constructor(private readonly maxKeys: number = DEFAULT_MAX_KEYS) {}

  /**
   * The cached denial of `charge` (its key, for its cost, by its algorithm's configuration) at `now`,
   * its retry time counted down; undefined when there is none. For a reservation (`maxDelayMs`): a
   * consume's denial holds until `maxDelayMs` before it ends (a slot that far ahead is no sooner than
   * the consume's), a reservation's for as much longer as its own `maxDelayMs` was longer; a consume
   * never reads a reservation's denial (a meter bucket's consume may pass before a reservation's slot
   * would). A block's denial (a ban, a lockout) holds until the block ends for every charge.
   */
  get(charge: Charge, now: number): Decision | undefined {
    if (!this.hearing) return undefined;
    // An empty cache (no denial yet) answers without digesting a long key.
    if (this.entries.size === 0) return undefined;
    const { key: storeKey, cost, algorithm, maxDelayMs: maxDelay } = charge;
    const held = heldKey(storeKey);
    const entry = this.entries.get(held);
    if (
      entry === undefined ||
      cost < entry.cost ||
      (!entry.own && cost !== entry.cost) ||
      entry.configuration !== configurationOf(algorithm)
    )
      return undefined;
    // Expired, or the clock went back past the denial (a wall clock stepped back: its retry, counted
    // on that clock, would hold for the whole step while the store decides on its own).
    if (entry.until - now <= 0 || now < entry.askedAt) {
      this.entries.delete(held);
      return undefined;
    }
    // A block's denial (a ban's, a lockout's: every denial of an algorithm with a lockout starts one)
    // holds until the block ends, whatever a reservation's `maxDelay`: nothing shifts it, and a blocked
    // key denies a consume as it denied a reservation.
    const blocked = entry.decision.reason === 'blocked' || algorithm.blockMs > 0;
    if (!blocked && maxDelay === undefined && entry.maxDelay !== undefined) return undefined;
    const ahead = blocked ? 0 : (entry.maxDelay ?? 0) - (maxDelay ?? 0);
    if (entry.until + ahead - now <= 0) return undefined;
    // The store's retry counted down, also past the time the entry is kept until.
    const wait = entry.retryAt + ahead - now;
    const d = entry.decision;
    const elapsed = d.retryAfterMs - wait;
    const decision = makeDecision({
      allowed: false,
      limit: d.limit,
      remaining: d.remaining,
      resetMs: Math.max(0, Math.ceil(d.resetMs - elapsed)),
      retryAfterMs: Math.ceil(wait),
      delayMs: 0,
      policy: d.policy,
      at: now,
    });
    (decision as { reason?: DecisionReason }).reason = 'deny-cache';
    return decision;
  }

  /**
   * The count of resets heard so far: read when a request is sent, and compared when its denial comes
   * back; a denial of a request sent before the latest reset heard is not remembered (its answer may
   * have been decided before the reset, and read after the notice of it: a notice and an answer come
   * on different connections).
   */
  get generation(): number {
    return this.heard;
  }

  /**
   * Keeps `decision`, the answer to `charge`, when it is the store's own denial with a retry time, from
   * `askedAt` (the time the request was sent: the earliest the store can have decided it), unless the
   * algorithm counts denied requests (each of them must reach the store), or the store cannot hear
   * resets now. A denial the store decided under an override (its policy is not the algorithm's) is
   * kept at most {@link OVERRIDE_DENIAL_MS}: an override ends at its ttl, which no notice tells, and
   * its denial's retry time can run past it.
   */
  remember(charge: Charge, decision: Decision, askedAt: number): void {
    const { key: storeKey, cost, algorithm, maxDelayMs: maxDelay } = charge;
    if (
      this.hearing &&
      !decision.allowed &&
      (decision.reason === undefined || decision.reason === 'blocked') &&
      decision.retryAfterMs > 0 &&
      !algorithm.countDenied
    ) {
      const own = decision.policy.name === (algorithm.policyAt?.(decision.at) ?? algorithm.policy).name;
      const entries = this.entries;
      if (entries.size >= this.maxKeys) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      entries.set(heldKey(storeKey), {
        askedAt,
        until: askedAt + (own ? decision.retryAfterMs : Math.min(decision.retryAfterMs, OVERRIDE_DENIAL_MS)),
        retryAt: askedAt + decision.retryAfterMs,
        own,
        cost,
        decision,
        configuration: configurationOf(algorithm),
        maxDelay,
      });
      const first = this.firstDenial;
      if (first !== undefined) {
        this.firstDenial = undefined;
        first();
      }
    }
  }

  /**
   * Keeps the store's denial in `answer` to `charge` (see {@link remember}), asked at `askedAt` when
   * the cache was at `generation` (both read just before the store call: see {@link generation}); a
   * denial whose request was on its way while a reset was heard is not kept, nor an idempotent
   * charge's (its retry is the store's to answer: it may be a replay).
   */
  answered(charge: Charge, answer: ChargeAnswer, askedAt: number, generation: number): void {
    if (this.heard === generation && !answer.decision.allowed && charge.idempotency === undefined)
      this.remember(charge, answer.decision, askedAt);
  }

  /**
   * Forgets what `store` says was reset anywhere (a key, or everything when its subscription was
   * (re)connected and resets may have been missed), and while the store says it cannot hear resets
   * (`hearing: false`: its subscription is not live) answers and remembers nothing, until the store
   * says it hears again. Resets matter once a denial is remembered: the cache subscribes then, not
   * before. A store without `watchResets` is not followed.
   */
  followResets(store: Store): void {
    const watch = store.watchResets;
    if (typeof watch !== 'function') return;
    const forget = (storageKey: string | undefined, hearing?: boolean): void => {
      this.heard++;
      this.hearing = hearing !== false;
      if (storageKey === undefined) this.clear();
      else this.delete(storageKey);
    };
    this.resetListener = forget;
    this.firstDenial = () => watch.call(store, forget);
  }

  /** Forgets `storeKey`: its state was reset, or units were given back (a cached denial would deny them). */
  delete(storeKey: string): void {
    this.entries.delete(heldKey(storeKey));
  }

  /** Forgets every denial (resets elsewhere may have been missed). */
  clear(): void {
    this.entries.clear();
  }
}

/**
 * The deny cache as a stage of a charge path: a charge it holds a denial for is answered with it
 * (`took: 'nothing'`, reason `'deny-cache'`) without going on; the store's denial of one that goes on
 * is remembered, unless a reset was heard while it was on its way (see {@link DenyCache.generation}).
 * An idempotent charge is the store's to answer (its retry may be a replay): it passes untouched.
 * `clock` is the limiter's local clock. (A request's grouped charges do both steps in the engine: every
 * limit's lookup before anything is charged, and each denial remembered as its answer comes: see
 * `GroupedCharge`.)
 */
export function denyCacheStage(cache: DenyCache, clock: () => number): ChargeStage {
  return (charge, next) => {
    if (charge.idempotency !== undefined) return next(charge);
    // Taken before the store call: a denial is cached from the earliest time the store can have decided it.
    const askedAt = clock();
    const cached = cache.get(charge, askedAt);
    if (cached !== undefined) return withoutStore(cached);
    const generation = cache.generation;
    const answer = next(charge);
    if (!(answer instanceof Promise)) {
      cache.answered(charge, answer, askedAt, generation);
      return answer;
    }
    return answer.then((a) => {
      cache.answered(charge, a, askedAt, generation);
      return a;
    });
  };
}

/** The configuration of each algorithm object, made once per object (collected with it). */
const configurations = new WeakMap<Algorithm, string>();

/**
 * What a denial is remembered under: the algorithm's script and the numbers of its configuration
 * (its lockout included), so that two objects of one configuration (a quota built per request from
 * the same numbers) share a cached denial, and objects of different configurations never do.
 */
export function configurationOf(algorithm: Algorithm): string {
  let id = configurations.get(algorithm);
  if (id === undefined) {
    const { name, constants } = algorithm.script;
    id = `${name}(${constants.map((c) => `${c.name}=${String(c.value)}`).join(',')})`;
    configurations.set(algorithm, id);
  }
  return id;
}

/**
 * The `denyCache` option: a cache, or undefined when off. Default: on for remote stores, off for local
 * ones; never for algorithms that count denied requests or for concurrency limits, whatever the option.
 * Without an algorithm (each call gives its own), a call whose algorithm counts denied requests skips it.
 */
export function parseDenyCache(
  option: unknown,
  algorithm: Algorithm | undefined,
  localStore: boolean,
  field = 'createLimiter.denyCache',
): DenyCache | undefined {
  const eligible = algorithm === undefined || (!algorithm.countDenied && algorithm.stateKind !== 'leases');
  if (option === undefined) return eligible && !localStore ? new DenyCache() : undefined;
  if (option === false) return undefined;
  if (option === true) return eligible ? new DenyCache() : undefined;
  if (option !== null && typeof option === 'object') {
    const { maxKeys } = checkOptions(option, ['maxKeys'], field);
    const max = maxKeys === undefined ? DEFAULT_MAX_KEYS : integerAtLeast(maxKeys, `${field}.maxKeys`);
    return eligible ? new DenyCache(max) : undefined;
  }
  throw new InvalidOptionError(field, option, 'true, false or { maxKeys }');
}
