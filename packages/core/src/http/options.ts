import { checkCost, type Algorithm } from '../algorithm.js';
import { MAX_COUNT, optionalBoolean } from '../options.js';
import { checkObserver } from '../limiter/observation.js';
import type { Observer } from '../observe/observer.js';
import { parseTimerDuration, type Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { checkAlgorithm, checkTimers, parseMaxDelay, type LimiterOptions, type StoreErrorPolicy } from '../limiter/index.js';
import { HTTP_PEER_OPTIONS, checkOptions, positiveNumber } from '../options.js';
import type { Store } from '../store/interface.js';
import { systemTimers, type Timers } from '../timers.js';
import { isPrintableAscii, parseHeaderFormat, type HeaderFormat } from './headers.js';
import { parseIPv6Subnet } from './keys.js';

/** Returns the key of a request (sync or async): requests with the same key share a limit. */
export type KeyFunction<Req> = (req: Req) => string | Promise<string>;
/** Returns the cost of a request in units (sync or async): a finite number greater than 0. */
export type CostFunction<Req> = (req: Req) => number | Promise<number>;
/** Returns true (sync or async) for requests the limits do not apply to. */
export type SkipFunction<Req> = (req: Req) => boolean | Promise<boolean>;
/**
 * Returns the rate algorithm of a request (sync or async): a plan, a tier, a customer's quota. See
 * {@link LimitOptions.algorithm}.
 */
export type AlgorithmFunction<Req> = (req: Req) => Algorithm | Promise<Algorithm>;

/** One limit among several (`limits`), for example a global limit, one per tenant and one per user. */
export interface LimitOptions<Req> {
  /**
   * The algorithm: `fixedWindow`, `slidingWindowLog`, `slidingWindowCounter`, `tokenBucket`,
   * `leakyBucket` or `concurrency`; or a function of the request returning the rate algorithm of that
   * request (sync or async): `(req) => plans[req.user.plan]`, or a customer's quota read from a
   * database. The headers then show the chosen limit. A key whose algorithm changes keeps its state
   * (per algorithm kind), clamped to the new capacity: a plan change never gives a fresh full bucket.
   * Any number of configurations is fine (the Redis store does not keep a script per configuration).
   * A function that throws, rejects or returns something other than a rate algorithm (a concurrency
   * algorithm; a shaping leaky bucket without `wait`) fails the request through the framework's error
   * path (500) and charges nothing.
   */
  algorithm: Algorithm | AlgorithmFunction<Req>;
  /**
   * The limit's name: the policy name in the draft-8 headers and the last part of its storage
   * namespace. Printable ASCII. Default: the algorithm's policy name (for example `100-in-1m`); for an
   * algorithm chosen per request, `per-request` in the namespace and the chosen algorithm's policy
   * name in the headers. Names must differ within one middleware.
   */
  name?: string;
  /** This limit's key (for example the tenant id); default: the middleware's `key`. */
  key?: KeyFunction<Req>;
  /** This limit's cost; default: the middleware's `cost`. Not allowed on a concurrency limit (a request holds one permit). */
  cost?: number | CostFunction<Req>;
  /** The largest cost this limit's cost function returns; default: the middleware's `maxCost` (see there). */
  maxCost?: number;
  /** This limit's store; default: the middleware's `store`. */
  store?: Store;
  /** This limit's failure policy; default: the middleware's `onStoreError`. */
  onStoreError?: StoreErrorPolicy;
  /** Decide and charge this limit but never enforce its denials (see {@link HttpRateLimitOptions.dryRun}); default: the middleware's `dryRun`. */
  dryRun?: boolean;
}

/** Waiting: hold requests until the slots their limits reserve. */
export interface WaitOptions {
  /**
   * Longest hold, at most the horizon of every limit's algorithm (its `maxReserveMs`: a window, a
   * bucket's full refill or drain; an `InvalidOptionError` at creation otherwise). A request that
   * would wait longer is rejected at once with 429 and takes nothing.
   */
  maxDelay: Duration;
}


/** The options of `createLimiter` that the HTTP layer passes through to every limit's limiter. */
type PassedLimiterOptions = 'timeout' | 'clock' | 'onStoreError' | 'denyCache' | 'storeRetryInterval' | 'storeFailureThreshold' | 'blockDuration';
const PASSED_LIMITER_OPTIONS = ['timeout', 'clock', 'onStoreError', 'denyCache', 'storeRetryInterval', 'storeFailureThreshold', 'blockDuration'] as const;

/**
 * The framework-independent options of every adapter's `rateLimit()`. `Req` is what the key, cost
 * and skip functions receive: Express `req`, Fastify `request`, Koa `ctx`. The limiter options
 * (`timeout`, `clock`, `onStoreError`, `denyCache`, `storeRetryInterval`, `storeFailureThreshold`,
 * `blockDuration`: a lockout after a denial, with Retry-After and the RateLimit `t` at its end) apply to
 * every limit, as in `createLimiter`.
 */
export interface HttpRateLimitOptions<Req> extends Pick<LimiterOptions, PassedLimiterOptions> {
  /** The algorithm of a single limit, or a function of the request choosing it (see {@link LimitOptions.algorithm}). Give either `algorithm` or `limits`. */
  algorithm?: Algorithm | AlgorithmFunction<Req>;
  /** Several limits applied together: a request is admitted only when all admit; a denial uses no quota in the others. */
  limits?: readonly LimitOptions<Req>[];
  /** Where state lives. Default: a new memory store for this middleware. */
  store?: Store;
  /**
   * Namespace of this middleware's state in the store (each limit adds `:<name>` when there are
   * several). Default: `rl:<limit names>`, plus `#<n>` for the n-th other middleware with the same
   * limits created in this process: stable across restarts and across instances of one app as long
   * as middlewares are created in the same order. Set it explicitly when several apps share a Redis,
   * or to share one limit between middlewares on purpose.
   */
  prefix?: string;
  /** The request's key. Default: the client IP as the framework resolves it (its trust-proxy setting), IPv6 grouped by `ipv6Subnet`. */
  key?: KeyFunction<Req>;
  /** Units the request costs: a number or a function. Default 1. */
  cost?: number | CostFunction<Req>;
  /**
   * The largest cost a cost function returns (default: each limit's capacity): a larger answer is
   * rejected (`RL_COST_EXCEEDS_CAPACITY`, through the framework's error path) and charges nothing.
   * It is what lets a limit fall back to a smaller one (`onStoreError: { fallback }`): the fallback
   * must take every cost charged. A constant `cost` is its own `maxCost`.
   */
  maxCost?: number;
  /** Requests for which this returns true pass without being counted and without headers. */
  skip?: SkipFunction<Req>;
  /** Header format: `'draft-8'` (default, also `true`), `'draft-7'`, `'draft-6'`, `'legacy'`, or `false`. Retry-After is always sent on a denial. */
  headers?: HeaderFormat | 'draft-9' | 'draft-10' | 'draft-11' | boolean;
  /**
   * Hold requests for their reservations: every rate limit reserves its units (`limiter.reserve`,
   * any rate algorithm) for a slot at most `maxDelay` ahead, and the request waits for the latest of
   * its slots; a limit that cannot reserve within it denies at once (429) and the others' reservations
   * are cancelled; a client that leaves while held cancels them all. Required with a shaping leaky
   * bucket (`mode: 'shape'`), whose step this is.
   */
  wait?: WaitOptions;
  /**
   * Count only the requests whose response failed: a request is charged when it arrives (so
   * concurrent attempts are limited) and its units are given back when its response finishes
   * successfully (see `requestWasSuccessful`, default: a status below 400). For a login limit that
   * counts failed attempts. Default false.
   */
  skipSuccessfulRequests?: boolean;
  /**
   * Do not count requests whose response failed (status 400 or above by default, see
   * `requestWasSuccessful`), nor those whose client left before the response finished: their units
   * are given back then. Default false.
   */
  skipFailedRequests?: boolean;
  /**
   * Decide and charge every limit as usual but never enforce a denial: the request goes on, and the
   * request's result (`req.rateLimit`, Fastify's `request.rateLimit`, Koa's `ctx.state.rateLimit`)
   * carries the decision that would have been made, with `dryRun: true` when it was a denial that was
   * not enforced. A dry-run limit is invisible to the client: it adds no RateLimit header, no policy
   * and no Retry-After. For rolling a new limit out safely; `limits[i].dryRun` sets it per limit.
   */
  dryRun?: boolean;
  /** Prefix length grouping IPv6 clients under the default key (default 56); `false` keys whole addresses. */
  ipv6Subnet?: number | false;
  /** Where the store timeout and shaping holds get their time and timers. Default: Node's timers; tests pass `FakeTimers` from `@rl/core/testing`. */
  timers?: Timers;
  /**
   * Hears every decision of every limit (under the limit's name), store errors, circuit changes and
   * the requests held and abandoned (see `Observer`; `prometheusObserver` from `@rl/prometheus`,
   * `openTelemetryObserver` from `@rl/opentelemetry`). Without one nothing is measured.
   */
  observer?: Observer;
  /** Put the request's key in observer events (default false: keys are personal data, and unbounded). */
  observeKeys?: boolean;
  /**
   * Log a store outage once (when the store of a limit starts failing, and when it answers again):
   * `true` (default) on the framework's logger where it has one (Fastify), else the console; `false`
   * for none (then listen to `middleware.on('storeError', …)` or use an observer).
   */
  logStoreErrors?: boolean;
}

const CORE_OPTIONS = [
  'algorithm', 'limits', 'store', 'prefix', 'key', 'cost', 'maxCost', 'skip', 'headers', 'wait', 'ipv6Subnet', 'timers',
  'skipSuccessfulRequests', 'skipFailedRequests', 'dryRun', 'observer', 'observeKeys', 'logStoreErrors', ...PASSED_LIMITER_OPTIONS,
] as const;
const LIMIT_OPTIONS = ['algorithm', 'name', 'key', 'cost', 'maxCost', 'store', 'onStoreError', 'dryRun'] as const;
/** The storage name of a limit whose algorithm is chosen per request, when it has no name of its own. */
const PER_REQUEST_NAME = 'per-request';

/**
 * Throws {@link InvalidOptionError} when `options` is not an object or names an option that neither
 * the http layer nor the adapter (`adapterOptions`) knows. For adapters that validate options whose
 * limits are only complete later (Fastify's `global: false` plugin options, completed per route).
 */
export function checkOptionNames(options: unknown, owner: string, adapterOptions: readonly string[]): Record<string, unknown> {
  return checkOptions(options, [...CORE_OPTIONS, ...adapterOptions], owner, HTTP_PEER_OPTIONS);
}

/** A cost as parsed once: a constant (checked against the algorithm at creation) or a function of the request. */
export type Cost<Req> = number | CostFunction<Req>;

/** One limit as parsed from the options. */
export interface LimitConfig<Req> {
  /** The algorithm; undefined when it is chosen per request ({@link algorithmOf}). */
  readonly algorithm: Algorithm | undefined;
  /** The function choosing the algorithm per request; undefined for a fixed algorithm. */
  readonly algorithmOf: AlgorithmFunction<Req> | undefined;
  /** Unique within the middleware, printable ASCII: the storage name. */
  readonly name: string;
  /** The policy name in the headers: `name`, or undefined for the chosen algorithm's policy name (a per-request limit without a name). */
  readonly headerName: string | undefined;
  /** Denials are decided and charged, never enforced nor shown to the client. */
  readonly dryRun: boolean;
  /** A concurrency limit: it takes a permit, released when the response ends. */
  readonly leases: boolean;
  /** This limit's own key function; undefined: the middleware's key. */
  readonly key: KeyFunction<Req> | undefined;
  /** This limit's cost, its own or the middleware's (1 for a concurrency limit). */
  readonly cost: Cost<Req>;
  /** True when `cost` is the middleware's (a cost function is then called once per request for all such limits). */
  readonly sharedCost: boolean;
  /**
   * The largest cost this limit is ever charged, when known at creation: its constant cost (1 for a
   * concurrency limit), or the `maxCost` option bounding its cost function. Undefined otherwise (up to
   * the algorithm's capacity; for an algorithm chosen per request, the chosen one's).
   */
  readonly maxCost: number | undefined;
  /** This limit's own store; undefined: the middleware's. */
  readonly store: Store | undefined;
  /** This limit's own failure policy; undefined: the middleware's. */
  readonly onStoreError: StoreErrorPolicy | undefined;
}

/** The options of one middleware, parsed and validated once (frozen). */
export interface HttpConfig<Req> {
  /** The factory name in error messages, for example `rateLimit`. */
  readonly owner: string;
  readonly limits: readonly LimitConfig<Req>[];
  /** The middleware's key function; undefined: the default key (the client IP). */
  readonly key: KeyFunction<Req> | undefined;
  readonly skip: SkipFunction<Req> | undefined;
  readonly headers: HeaderFormat | false;
  /** The longest hold in ms (`wait.maxDelay`): the rate limits then reserve; 0 without `wait` (they consume). */
  readonly maxDelayMs: number;
  /** Give a request's units back when its response finished successfully (`skipSuccessfulRequests`). */
  readonly skipSuccessful: boolean;
  /** Give a request's units back when its response failed or never finished (`skipFailedRequests`). */
  readonly skipFailed: boolean;
  readonly observer: Observer | undefined;
  readonly observeKeys: boolean;
  readonly logStoreErrors: boolean;
  /** The explicit prefix; undefined: a default one is taken from the limit names. */
  readonly prefix: string | undefined;
  readonly store: Store | undefined;
  readonly ipv6Subnet: number | false;
  readonly timers: Timers;
  /** The limiter options passed through to every limit's limiter (validated by `createLimiter`). */
  readonly limiterOptions: Readonly<Pick<LimiterOptions, PassedLimiterOptions>>;
}

/**
 * Parses the options of one middleware; throws {@link InvalidOptionError} naming the field. One rule
 * for every option, a limit's too: `undefined` is "not given"; `null` is a bad value like any other.
 */
export function parseHttpOptions<Req>(options: HttpRateLimitOptions<Req>, owner: string, adapterOptions: readonly string[]): HttpConfig<Req> {
  const o = checkOptionNames(options, owner, adapterOptions);
  // Checked by createLimiter, which must never see a null as "not given".
  for (const name of PASSED_LIMITER_OPTIONS) if (o[name] === null) throw nullOption(`${owner}.${name}`);
  if ((o.algorithm === undefined) === (o.limits === undefined)) {
    throw new InvalidOptionError(
      `${owner}.algorithm`,
      o.algorithm,
      'exactly one of algorithm (one limit) or limits (several), for example algorithm: tokenBucket({ capacity: 20, refillRate: 10 })',
    );
  }
  const several = o.limits !== undefined;
  const limitOptions: Record<string, unknown>[] = [];
  if (!several) {
    if (typeof o.algorithm !== 'function') checkAlgorithm(o.algorithm, `${owner}.algorithm`);
    limitOptions.push({ algorithm: o.algorithm });
  } else {
    if (!Array.isArray(o.limits) || o.limits.length === 0) {
      throw new InvalidOptionError(`${owner}.limits`, o.limits, 'a non-empty array of { algorithm, name?, key?, cost?, store?, onStoreError? }');
    }
    o.limits.forEach((limit: unknown, i: number) => {
      const l = checkOptions(limit, LIMIT_OPTIONS, `${owner}.limits[${i}]`, HTTP_PEER_OPTIONS);
      if (typeof l.algorithm !== 'function') checkAlgorithm(l.algorithm, `${owner}.limits[${i}].algorithm`);
      limitOptions.push(l);
    });
  }

  const key = optionalFunction<KeyFunction<Req>>(o.key, `${owner}.key`);
  const skip = optionalFunction<SkipFunction<Req>>(o.skip, `${owner}.skip`);
  const cost = o.cost === undefined ? 1 : parseCost<Req>(o.cost, `${owner}.cost`);
  const ipv6Subnet = parseIPv6Subnet(o.ipv6Subnet, `${owner}.ipv6Subnet`);
  const timers = o.timers === undefined ? systemTimers : checkTimers(o.timers, `${owner}.timers`);
  const headers = parseHeaderFormat(o.headers, `${owner}.headers`);
  if (o.prefix !== undefined && (typeof o.prefix !== 'string' || o.prefix.length === 0)) {
    throw new InvalidOptionError(`${owner}.prefix`, o.prefix, 'a non-empty string');
  }
  const store = optionalStore(o.store, `${owner}.store`);
  const dryRun = optionalBoolean(o.dryRun, `${owner}.dryRun`, false);
  if (o.observer !== undefined) checkObserver(o.observer, `${owner}.observer`);
  const skipSuccessful = optionalBoolean(o.skipSuccessfulRequests, `${owner}.skipSuccessfulRequests`, false);
  const skipFailed = optionalBoolean(o.skipFailedRequests, `${owner}.skipFailedRequests`, false);

  const names: string[] = [];
  const limits = limitOptions.map((l, i): LimitConfig<Req> => {
    const field = several ? `${owner}.limits[${i}]` : owner;
    const algorithmOf = typeof l.algorithm === 'function' ? (l.algorithm as AlgorithmFunction<Req>) : undefined;
    const algorithm = algorithmOf === undefined ? (l.algorithm as Algorithm) : undefined;
    const name = l.name === undefined ? (algorithm?.policy.name ?? PER_REQUEST_NAME) : l.name;
    const nameField = several ? `${field}.name` : `${owner}.algorithm`;
    if (typeof name !== 'string' || name.length === 0 || !isPrintableAscii(name)) throw new InvalidOptionError(nameField, name, 'a non-empty string of printable ASCII characters');
    if (names.includes(name)) throw new InvalidOptionError(nameField, name, `a name unique within this middleware (two limits are named "${name}"; give each a name)`);
    names.push(name);
    const limitDryRun = l.dryRun === undefined ? dryRun : optionalBoolean(l.dryRun, `${field}.dryRun`, false);
    return Object.freeze({
      ...parseLimit<Req>(l, algorithm, name, field, cost, o.maxCost, owner),
      algorithmOf,
      headerName: l.name === undefined && algorithm === undefined ? undefined : name,
      dryRun: limitDryRun,
    });
  });

  let maxDelayMs = 0;
  const shapes = limits.some((l) => l.algorithm?.mayDelay === true);
  if (o.wait === undefined) {
    if (shapes) throw new InvalidOptionError(`${owner}.wait`, undefined, "{ maxDelay } with a shaping leaky bucket (mode: 'shape'): the longest a request may be held");
  } else {
    // With wait, every rate limit reserves (limiter.reserve) instead of consuming: a request waits
    // for the latest of its slots, at most maxDelay, and is denied at once when it cannot get one.
    if (limits.every((l) => l.leases)) throw new InvalidOptionError(`${owner}.wait`, o.wait, 'no wait: it applies to rate limits (a request waits for its reservations), and every limit here is a concurrency limit');
    const w = checkOptions(o.wait, ['maxDelay'], `${owner}.wait`);
    maxDelayMs = parseTimerDuration(w.maxDelay, `${owner}.wait.maxDelay`);
    // Within every fixed algorithm's horizon (a chosen algorithm reserves within the smaller of the two).
    for (const l of limits) if (l.algorithm !== undefined && !l.leases) parseMaxDelay(maxDelayMs, l.algorithm, `${owner}.wait.maxDelay`);
  }

  const limiterOptions: Record<string, unknown> = {};
  for (const name of PASSED_LIMITER_OPTIONS) if (o[name] !== undefined) limiterOptions[name] = o[name];
  return Object.freeze({
    owner,
    limits: Object.freeze(limits),
    key,
    skip,
    headers,
    maxDelayMs,
    skipSuccessful,
    skipFailed,
    observer: o.observer as Observer | undefined,
    observeKeys: optionalBoolean(o.observeKeys, `${owner}.observeKeys`, false),
    logStoreErrors: optionalBoolean(o.logStoreErrors, `${owner}.logStoreErrors`, true),
    prefix: o.prefix as string | undefined,
    store,
    ipv6Subnet,
    timers,
    limiterOptions: Object.freeze(limiterOptions),
  });
}

/**
 * One limit's own options (key, cost, store, policy), its cost checked against its algorithm when
 * constant (`algorithm` undefined: chosen per request, and its cost checked per request).
 */
function parseLimit<Req>(
  l: Record<string, unknown>,
  algorithm: Algorithm | undefined,
  name: string,
  field: string,
  sharedCost: Cost<Req>,
  sharedMaxCost: unknown,
  owner: string,
): Omit<LimitConfig<Req>, 'algorithmOf' | 'headerName' | 'dryRun'> {
  const leases = algorithm?.stateKind === 'leases';
  const key = optionalFunction<KeyFunction<Req>>(l.key, `${field}.key`);
  let cost: Cost<Req> | undefined;
  if (l.cost !== undefined) {
    if (leases) throw new InvalidOptionError(`${field}.cost`, l.cost, 'no cost on a concurrency limit: a request holds one permit');
    cost = parseCost<Req>(l.cost, `${field}.cost`);
  }
  if (l.onStoreError === null) throw nullOption(`${field}.onStoreError`);
  const effective = leases ? 1 : (cost ?? sharedCost);
  // A constant cost is checked here, once: requests then charge it unchecked (a per-request algorithm's capacity, per request).
  if (!leases && typeof effective === 'number' && algorithm !== undefined) checkCost(algorithm, effective);
  const maxCostField = l.maxCost !== undefined ? `${field}.maxCost` : `${owner}.maxCost`;
  const declared = leases ? undefined : parseMaxCost(l.maxCost !== undefined ? l.maxCost : sharedMaxCost, maxCostField, algorithm);
  if (declared !== undefined && typeof effective === 'number' && effective > declared) {
    throw new InvalidOptionError(maxCostField, declared, `at least the constant cost ${effective} it bounds`);
  }
  return {
    algorithm,
    name,
    leases,
    key,
    cost: effective,
    sharedCost: !leases && cost === undefined,
    maxCost: typeof effective === 'number' ? effective : declared,
    store: optionalStore(l.store, `${field}.store`),
    onStoreError: l.onStoreError as StoreErrorPolicy | undefined,
  };
}

/**
 * A `maxCost` option: undefined (the capacity), or a number greater than 0 and at most the algorithm's
 * capacity (for an algorithm chosen per request, at most {@link MAX_COUNT}).
 */
function parseMaxCost(value: unknown, field: string, algorithm: Algorithm | undefined): number | undefined {
  if (value === undefined) return undefined;
  const most = algorithm?.maxCost ?? MAX_COUNT;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > most) {
    throw new InvalidOptionError(field, value, algorithm === undefined ? `a number greater than 0 and at most ${MAX_COUNT}` : `a number greater than 0 and at most the ${algorithm.kind} capacity ${algorithm.maxCost}`);
  }
  return value;
}

/** A `store` option: undefined (the default) or a store (which `createLimiter` checks in full). */
function optionalStore(value: unknown, field: string): Store | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') throw new InvalidOptionError(field, value, 'a store such as new MemoryStore() (leave the option out for the default)');
  return value as Store;
}

/** The error for an option given as null: leaving it out (undefined) is how to take its default. */
function nullOption(field: string): InvalidOptionError {
  return new InvalidOptionError(field, null, 'a value: null is not "not given" (leave the option out for its default)');
}

/** The one check of a `cost` option: a positive number, or a function of the request (its answers are checked per request). */
function parseCost<Req>(value: unknown, field: string): Cost<Req> {
  return typeof value === 'function' ? (value as CostFunction<Req>) : positiveNumber(value, field);
}

function optionalFunction<F>(value: unknown, field: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new InvalidOptionError(field, value, 'a function of the request');
  return value as F;
}
