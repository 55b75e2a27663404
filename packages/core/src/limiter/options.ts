import { checkAlgorithm, type Algorithm } from '../algorithm.js';
import { withBans, withBlock } from '../algorithms/block.js';
import { withOverrides } from '../algorithms/override.js';
import { MAX_CLOCK_MS, systemClock, type Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { parseDuration, parseTimerDuration, type Duration } from '../duration.js';
import { InvalidOptionError, UnsupportedError } from '../errors.js';
import {
  MAX_COUNT,
  checkOptions,
  integerAtLeast,
  isPrintableAscii,
  optionalBoolean,
  positiveNumber,
} from '../options.js';
import { LIMITER_PEER_OPTIONS } from '../peer-option-hints.js';
import type { Store } from '../store/interface.js';
import type { Observer } from '../observe/observer.js';
import { checkTimers, systemTimers, type Timers } from '../timers.js';
import { parseBans, parseBlockDuration, parseOverrides } from './block-options.js';
import { parseDenyCache, type DenyCache } from './deny-cache.js';
import { parseLeaseOptions, type LeaseConfig, type LeaseOptions } from './lease-options.js';
import { parseIdempotencyOptions, type IdempotencyConfig, type IdempotencyOptions } from './idempotency.js';
import { checkMaxDebt, type SettleOptions } from './settlement.js';
import { refuseOptionsMistake, refuseStoreMistake, refuseUncalledFactory } from '../option-mistakes.js';
import { warnDefaultPrefix } from '../default-prefix.js';

/**
 * A limiter given as a fallback: a `Limiter` from `createLimiter` (only those are accepted; its
 * store, prefix, timeout and circuit apply to what it decides).
 */
export interface FallbackLimiter {
  readonly store: Store;
  readonly prefix: string;
  consume(key: string, cost?: number): Promise<Decision>;
}

/** What to do when the store fails or times out. */
export type StoreErrorPolicy =
  /** Deny the request (fail closed). The HTTP layer answers 503 with Retry-After. */
  | 'deny'
  /** Admit the request (fail open). */
  | 'allow'
  /**
   * Apply a local limiter instead while the store is failing, for example the shared limit divided by
   * the number of instances. It must take every cost the main limiter charges: its capacity at least
   * the main limiter's `maxCost`.
   */
  | { fallback: FallbackLimiter | LimiterOptions };

export interface LimiterOptions extends SettleOptions, IdempotencyOptions {
  /**
   * The algorithm (from one of `ALGORITHM_FACTORIES`: `tokenBucket({ capacity: 20, refillRate: 10 })`,
   * `concurrency({ limit: 50 })`, …). Every call may also name its own rate algorithm
   * (`consume(key, cost, algorithm)`: a plan or a quota chosen per request); leave this out when every
   * call does (the limiter is then a rate limiter).
   */
  algorithm?: Algorithm;
  /** Where state lives: a `MemoryStore`, a `RedisStore`, or any {@link Store}. */
  store: Store;
  /**
   * Time source in ms. When given, every decision uses it (also on Redis). When omitted, the store's own
   * clock decides (Redis `TIME`). A reading that is not a number of ms within ±8.64e15 (the range
   * of a `Date`) fails that call with an
   * `InvalidOptionError` on `createLimiter.clock` before anything is charged.
   */
  clock?: Clock;
  /**
   * Namespace prepended to every key (`<prefix>:<key>`), so that two limits on one store never share
   * state. Two prefixes of which one is the other followed by `:` (`api` and `api:login`) can meet:
   * `api` with the key `login:alice` is `api:login` with `alice`; give such limits prefixes that do not
   * nest (`api-all`, `api-login`) when their keys may contain `:` (IPv6 addresses do).
   */
  prefix?: string;
  /**
   * The largest cost this limiter is asked to charge (default: the algorithm's `maxCost`, its capacity
   * or limit; without an algorithm, 999999999999999); a larger cost is rejected with
   * `RL_COST_EXCEEDS_CAPACITY`, as is a cost above the capacity of a call's own algorithm. A fallback
   * must hold it. A finite number greater than 0 and at most the algorithm's `maxCost`.
   */
  maxCost?: number;
  /**
   * Longest wait for the store before the failure policy applies (at most 24 days, the longest Node
   * timer). Default: 50 ms for remote stores, none for local ones. `false` disables it. Its timer never
   * keeps the process alive. An operator's call (`reset`, `block`, `setOverride`, …) gets this or 1 s, the longer.
   */
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
   * A lockout (brute-force protection: 5 failed logins per 15 minutes, then a 1-hour block): once a
   * request of a key is denied by the store, every request of that key is denied for this long from
   * that denial, with `retryAfterMs` the time to the block's end (`resetMs` at least that). Requests
   * during the block charge nothing and do not extend it; `reset(key)` lifts it, a give-back does not.
   * The block lives in the store, written with the denial that starts it (one round trip), so every
   * instance sharing the store sees it. Rate limits only (a concurrency limit: `InvalidOptionError`);
   * the store must declare `capabilities.blocks` (`UnsupportedError` otherwise). From 1 ms to
   * 999999999999999 ms.
   */
  blockDuration?: Duration;
  /**
   * Check each key's ban (`limiter.block`) in the same store step as its decision (default false: a
   * ban needs it, or `blockDuration`, whose lockouts live in the same place). It costs each decision
   * one more read in the store. Rate limits only; not with `lease`.
   */
  bans?: boolean;
  /**
   * Check each key's override (`limiter.setOverride`) in the same store step as its decision (default
   * false). It costs each decision one more read in the store. Rate limits only; not with `lease`.
   */
  overrides?: boolean;
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
  /** Where the store timeout gets its time and its timer. Default: Node's timers; tests pass `FakeTimers` from `@rl/core/simulation`. */
  timers?: Timers;
  /**
   * The limit's name in observer events and metrics labels (printable ASCII, bounded: not a key).
   * Default: the `prefix`, else the algorithm's policy name (for example `100-in-1m`), else `limit`.
   */
  name?: string;
  /**
   * Hears every decision, store error and circuit change of this limiter (see `Observer`; for example
   * `prometheusObserver({ registry })` from `@rl/prometheus`). Without one nothing is measured. More
   * observers: `limiter.observe(observer)`.
   */
  observer?: Observer;
  /** Put the request's key in observer events (default false: keys are personal data, and unbounded as metric labels). */
  observeKeys?: boolean;
  /**
   * Quota leases for hot keys and global limits (see {@link LeaseOptions}): `{ units: 50 }` takes 50
   * units of a key's shared quota in one store call and admits from them locally, so a busy key costs
   * about one store call per 50 requests. Strict (never more than the limit across instances);
   * under-admits by at most `units` per instance. Rate limits without `countDenied` or `blockDuration`.
   */
  lease?: LeaseOptions;
}

/** {@link LimiterOptions} checked once, with every default applied. */
export interface LimiterConfig {
  /** Undefined: every call gives its own (rate) algorithm. Carries the lockout (see `withBlock`). */
  readonly algorithm: Algorithm | undefined;
  readonly store: Store;
  /** The user's clock, checked at every reading ({@link checkedClock}), or undefined to let the store's own clock decide. */
  readonly clock: Clock | undefined;
  /** The clock of local decisions (the circuit, the deny cache): the user's, or the system clock. */
  readonly localClock: Clock;
  readonly prefix: string;
  /** The limit's name in observer events (see {@link LimiterOptions.name}). */
  readonly name: string;
  readonly observer: Observer | undefined;
  readonly observeKeys: boolean;
  readonly maxCost: number;
  /** 0: no timeout. */
  readonly timeoutMs: number;
  readonly retryIntervalMs: number;
  readonly failureThreshold: number;
  readonly timers: Timers;
  /** `onStoreError` as given, parsed by the failure policy's wiring. */
  readonly onStoreError: unknown;
  readonly denyCache: DenyCache | undefined;
  /** The lockout after a denial in ms (0: none); `algorithm` already carries it (see `withBlock`). */
  readonly blockMs: number;
  /** The key's ban is checked with each decision (option `bans`, or a lockout on a store that holds bans): `block` and `unblock` work; `algorithm` carries it (see `withBans`). */
  readonly bans: boolean;
  /** The key's override is checked with each decision (option `overrides`): `setOverride` works; `algorithm` carries it (see `withOverrides`). */
  readonly overrides: boolean;
  /** Quota leases; undefined: every charge goes to the store. */
  readonly lease: LeaseConfig | undefined;
  /** Undefined: the limit of the algorithm that charged (see {@link LimiterOptions.maxDebt}). */
  readonly maxDebt: number | undefined;
  /** How long, how many ids per key and how many replays per id idempotent charges are remembered. */
  readonly idempotency: IdempotencyConfig;
}

const LIMITER_OPTIONS = [
  'algorithm',
  'store',
  'clock',
  'prefix',
  'maxCost',
  'timeout',
  'onStoreError',
  'denyCache',
  'storeRetryInterval',
  'storeFailureThreshold',
  'timers',
  'blockDuration',
  'bans',
  'overrides',
  'name',
  'observer',
  'observeKeys',
  'lease',
  'maxDebt',
  'idempotencyTtl',
  'idempotencyMaxIds',
  'idempotencyMaxReplays',
] as const;
const DEFAULT_REMOTE_TIMEOUT_MS = 50;
const DEFAULT_RETRY_INTERVAL_MS = 1000;
const DEFAULT_FAILURE_THRESHOLD = 3;

/**
 * Checks every option of `createLimiter` (throwing {@link InvalidOptionError} naming the field) and
 * applies the defaults. `name` is where the options were given, the start of every field's name:
 * `createLimiter`, `createLimiter.onStoreError.fallback` for a fallback's options, `rateLimit.limits[1]`
 * for a middleware's limit.
 */
export function parseLimiterOptions(options: LimiterOptions, name = 'createLimiter'): LimiterConfig {
  refuseOptionsMistake(options, name);
  const o = checkOptions(options, LIMITER_OPTIONS, name, LIMITER_PEER_OPTIONS);
  refuseUncalledFactory(o.algorithm, `${name}.algorithm`);
  const algorithm = o.algorithm === undefined ? undefined : checkAlgorithm(o.algorithm, `${name}.algorithm`);
  const store = checkStore(o.store, `${name}.store`);
  if (algorithm !== undefined) checkStoreRuns(store, algorithm);
  if (o.clock !== undefined && typeof o.clock !== 'function') {
    throw new InvalidOptionError(`${name}.clock`, o.clock, 'a function returning the time in milliseconds');
  }
  if (o.prefix !== undefined && typeof o.prefix !== 'string') {
    throw new InvalidOptionError(`${name}.prefix`, o.prefix, 'a string');
  }
  if (o.prefix === undefined) warnDefaultPrefix(store, name, '');
  const clock = o.clock === undefined ? undefined : checkedClock(o.clock as Clock, `${name}.clock`);
  const local = store.capabilities.local;
  const blockMs = parseBlockDuration(o.blockDuration, algorithm, store, `${name}.blockDuration`);
  // A lockout's check reads a ban too, where the store holds bans.
  const bans = parseBans(o.bans, algorithm, store, `${name}.bans`) || (blockMs > 0 && store.capabilities.bans === true);
  const blocked =
    algorithm === undefined || o.blockDuration === undefined
      ? algorithm
      : withBlock(algorithm, blockMs, `${name}.blockDuration`);
  const banned = bans && blocked !== undefined ? withBans(blocked) : blocked;
  const overrides = parseOverrides(o.overrides, algorithm, store, `${name}.overrides`);
  return {
    algorithm: overrides && banned !== undefined ? withOverrides(banned) : banned,
    blockMs,
    bans,
    overrides,
    store,
    clock,
    localClock: clock ?? systemClock,
    prefix: (o.prefix as string | undefined) ?? '',
    name: parseLimitName(o.name, (o.prefix as string | undefined) || algorithm?.policy.name || 'limit', `${name}.name`),
    observer: o.observer as Observer | undefined,
    observeKeys: optionalBoolean(o.observeKeys, `${name}.observeKeys`, false),
    maxCost:
      o.maxCost === undefined
        ? (algorithm?.maxCost ?? MAX_COUNT)
        : checkMaxCost(o.maxCost, algorithm, `${name}.maxCost`),
    timeoutMs:
      o.timeout === false
        ? 0
        : o.timeout === undefined
          ? local
            ? 0
            : DEFAULT_REMOTE_TIMEOUT_MS
          : parseTimerDuration(o.timeout, `${name}.timeout`),
    // Not a timer: the circuit compares it with its clock, and decisions carry it as their retry time.
    retryIntervalMs:
      o.storeRetryInterval === undefined
        ? DEFAULT_RETRY_INTERVAL_MS
        : parseDuration(o.storeRetryInterval, `${name}.storeRetryInterval`),
    failureThreshold:
      o.storeFailureThreshold === undefined
        ? DEFAULT_FAILURE_THRESHOLD
        : integerAtLeast(o.storeFailureThreshold, `${name}.storeFailureThreshold`),
    timers: o.timers === undefined ? systemTimers : checkTimers(o.timers, `${name}.timers`),
    onStoreError: o.onStoreError,
    denyCache: parseDenyCache(o.denyCache, algorithm, local, `${name}.denyCache`),
    lease: parseLeaseOptions(o.lease, algorithm, bans || blockMs > 0 || overrides, `${name}.lease`),
    maxDebt: o.maxDebt === undefined ? undefined : checkMaxDebt(o.maxDebt, `${name}.maxDebt`),
    idempotency: parseIdempotencyOptions(o, name),
  };
}

/**
 * The `store` option: an object with `charge` and `capabilities` (its methods are not probed further).
 * A store written for the interface before `charge` (`consume`, `undo`) is told what to change.
 */
export function checkStore(value: unknown, field: string): Store {
  const store = value as Store | null | undefined;
  if (!store || typeof store !== 'object' || typeof store.charge !== 'function' || !store.capabilities) {
    refuseStoreMistake(value, field);
    if (
      store &&
      typeof store === 'object' &&
      typeof (store as { consume?: unknown }).consume === 'function' &&
      store.capabilities
    ) {
      throw new InvalidOptionError(
        field,
        value,
        "a store of the current Store interface: its consume(key, algorithm, cost, now, …) is now charge(charge, now) answering { decision, took }, and undo(…) is giveBack(back, now) (see the store recipe's migration note, docs/recipe-writing-a-store.md)",
      );
    }
    throw new InvalidOptionError(field, value, 'a store such as new MemoryStore()');
  }
  return store;
}

/** Throws the `UnsupportedError` of a store that does not run `algorithm`'s kind. */
export function checkStoreRuns(store: Store, algorithm: Algorithm): void {
  if (!store.capabilities.algorithms.includes(algorithm.kind))
    throw new UnsupportedError(`This store does not support the ${algorithm.kind} algorithm.`);
}

/**
 * The `name` of a limit: a non-empty string of printable ASCII (a metrics label value, a header's
 * policy name), or `fallback` when not given.
 */
export function parseLimitName(value: unknown, fallback: string, field: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.length === 0 || !isPrintableAscii(value)) {
    throw new InvalidOptionError(
      field,
      value,
      'a non-empty string of printable ASCII characters (a metrics label value)',
    );
  }
  return value;
}

/**
 * A `maxCost` option: a number greater than 0 and at most the algorithm's `maxCost` (without an
 * algorithm, chosen per call, at most {@link MAX_COUNT}).
 */
export function checkMaxCost(value: unknown, algorithm: Algorithm | undefined, field: string): number {
  const maxCost = positiveNumber(value, field);
  if (algorithm === undefined) {
    if (maxCost > MAX_COUNT) throw new InvalidOptionError(field, value, `at most ${MAX_COUNT}`);
    return maxCost;
  }
  if (maxCost > algorithm.maxCost) {
    throw new InvalidOptionError(
      field,
      value,
      `at most the ${algorithm.kind} capacity ${algorithm.maxCost} (a larger cost could never be admitted)`,
    );
  }
  return maxCost;
}

/**
 * The user's clock, checked at every reading: a time that is not a number of milliseconds within
 * ±{@link MAX_CLOCK_MS} (NaN, ±Infinity, 1e300, not a number) throws {@link InvalidOptionError} naming
 * `field` instead of reaching a store, the circuit or the deny cache, so one bad reading fails one
 * call and corrupts no key. Every reading of the limiter goes through it (the store's `now`, the
 * circuit's and the deny cache's times).
 */
function checkedClock(clock: Clock, field: string): Clock {
  return () => {
    const now = clock();
    if (typeof now === 'number' && now >= -MAX_CLOCK_MS && now <= MAX_CLOCK_MS) return now;
    throw new InvalidOptionError(
      field,
      now,
      `a clock that returns a number of milliseconds within ±${MAX_CLOCK_MS} (the range of a Date; nothing was charged)`,
    );
  };
}
