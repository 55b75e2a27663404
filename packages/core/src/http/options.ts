import { checkCost, type Algorithm } from '../algorithm.js';
import { parseTimerDuration, type Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { checkAlgorithm, checkTimers, type LimiterOptions, type StoreErrorPolicy } from '../limiter/index.js';
import { checkOptions, positiveNumber } from '../options.js';
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

/** One limit among several (`limits`), for example a global limit, one per tenant and one per user. */
export interface LimitOptions<Req> {
  /** The algorithm: `fixedWindow`, `slidingWindowLog`, `slidingWindowCounter`, `tokenBucket`, `leakyBucket` or `concurrency`. */
  algorithm: Algorithm;
  /**
   * The limit's name: the policy name in the draft-8 headers and the last part of its storage
   * namespace. Printable ASCII. Default: the algorithm's policy name (for example `100-in-1m`).
   * Names must differ within one middleware.
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
}

/** Shaping: hold requests that a shaping leaky bucket admits with a delay. */
export interface WaitOptions {
  /** Longest hold; a request that would wait longer is rejected at once with 429 (its slot is given back). */
  maxDelay: Duration;
}

/** The options of `createLimiter` that the HTTP layer passes through to every limit's limiter. */
type PassedLimiterOptions = 'timeout' | 'clock' | 'onStoreError' | 'denyCache' | 'storeRetryInterval' | 'storeFailureThreshold';
const PASSED_LIMITER_OPTIONS = ['timeout', 'clock', 'onStoreError', 'denyCache', 'storeRetryInterval', 'storeFailureThreshold'] as const;

/**
 * The framework-independent options of every adapter's `rateLimit()`. `Req` is what the key, cost
 * and skip functions receive: Express `req`, Fastify `request`, Koa `ctx`. The limiter options
 * (`timeout`, `clock`, `onStoreError`, `denyCache`, `storeRetryInterval`, `storeFailureThreshold`)
 * apply to every limit, as in `createLimiter`.
 */
export interface HttpRateLimitOptions<Req> extends Pick<LimiterOptions, PassedLimiterOptions> {
  /** The algorithm of a single limit. Give either `algorithm` or `limits`. */
  algorithm?: Algorithm;
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
  /** Required when a limit is a shaping leaky bucket (`mode: 'shape'`), and only then. */
  wait?: WaitOptions;
  /** Prefix length grouping IPv6 clients under the default key (default 56); `false` keys whole addresses. */
  ipv6Subnet?: number | false;
  /** Where the store timeout and shaping holds get their time and timers. Default: Node's timers; tests pass `FakeTimers` from `@rl/core/testing`. */
  timers?: Timers;
}

const CORE_OPTIONS = ['algorithm', 'limits', 'store', 'prefix', 'key', 'cost', 'maxCost', 'skip', 'headers', 'wait', 'ipv6Subnet', 'timers', ...PASSED_LIMITER_OPTIONS] as const;
const LIMIT_OPTIONS = ['algorithm', 'name', 'key', 'cost', 'maxCost', 'store', 'onStoreError'] as const;

/**
 * Throws {@link InvalidOptionError} when `options` is not an object or names an option that neither
 * the http layer nor the adapter (`adapterOptions`) knows. For adapters that validate options whose
 * limits are only complete later (Fastify's `global: false` plugin options, completed per route).
 */
export function checkOptionNames(options: unknown, owner: string, adapterOptions: readonly string[]): Record<string, unknown> {
  return checkOptions(options, [...CORE_OPTIONS, ...adapterOptions], owner);
}

/** A cost as parsed once: a constant (checked against the algorithm at creation) or a function of the request. */
export type Cost<Req> = number | CostFunction<Req>;

/** One limit as parsed from the options. */
export interface LimitConfig<Req> {
  readonly algorithm: Algorithm;
  /** Unique within the middleware, printable ASCII. */
  readonly name: string;
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
   * the algorithm's capacity).
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
  /** The longest shaping hold in ms; 0 when no limit shapes. */
  readonly maxDelayMs: number;
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
    checkAlgorithm(o.algorithm, `${owner}.algorithm`);
    limitOptions.push({ algorithm: o.algorithm });
  } else {
    if (!Array.isArray(o.limits) || o.limits.length === 0) {
      throw new InvalidOptionError(`${owner}.limits`, o.limits, 'a non-empty array of { algorithm, name?, key?, cost?, store?, onStoreError? }');
    }
    o.limits.forEach((limit: unknown, i: number) => {
      const l = checkOptions(limit, LIMIT_OPTIONS, `${owner}.limits[${i}]`);
      checkAlgorithm(l.algorithm, `${owner}.limits[${i}].algorithm`);
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

  const names: string[] = [];
  const limits = limitOptions.map((l, i): LimitConfig<Req> => {
    const field = several ? `${owner}.limits[${i}]` : owner;
    const algorithm = l.algorithm as Algorithm;
    const name = l.name === undefined ? algorithm.policy.name : l.name;
    const nameField = several ? `${field}.name` : `${owner}.algorithm`;
    if (typeof name !== 'string' || name.length === 0 || !isPrintableAscii(name)) throw new InvalidOptionError(nameField, name, 'a non-empty string of printable ASCII characters');
    if (names.includes(name)) throw new InvalidOptionError(nameField, name, `a name unique within this middleware (two limits are named "${name}"; give each a name)`);
    names.push(name);
    return Object.freeze(parseLimit<Req>(l, algorithm, name, field, cost, o.maxCost, owner));
  });

  let maxDelayMs = 0;
  const shapes = limits.some((l) => l.algorithm.mayDelay);
  if (o.wait === undefined) {
    if (shapes) throw new InvalidOptionError(`${owner}.wait`, undefined, "{ maxDelay } with a shaping leaky bucket (mode: 'shape'): the longest a request may be held");
  } else {
    if (!shapes) throw new InvalidOptionError(`${owner}.wait`, o.wait, "no wait: it applies only to a shaping leaky bucket (leakyBucket({ ..., mode: 'shape' }))");
    const w = checkOptions(o.wait, ['maxDelay'], `${owner}.wait`);
    maxDelayMs = parseTimerDuration(w.maxDelay, `${owner}.wait.maxDelay`);
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
    prefix: o.prefix as string | undefined,
    store,
    ipv6Subnet,
    timers,
    limiterOptions: Object.freeze(limiterOptions),
  });
}

/** One limit's own options (key, cost, store, policy), its cost checked against its algorithm when constant. */
function parseLimit<Req>(
  l: Record<string, unknown>,
  algorithm: Algorithm,
  name: string,
  field: string,
  sharedCost: Cost<Req>,
  sharedMaxCost: unknown,
  owner: string,
): LimitConfig<Req> {
  const leases = algorithm.stateKind === 'leases';
  const key = optionalFunction<KeyFunction<Req>>(l.key, `${field}.key`);
  let cost: Cost<Req> | undefined;
  if (l.cost !== undefined) {
    if (leases) throw new InvalidOptionError(`${field}.cost`, l.cost, 'no cost on a concurrency limit: a request holds one permit');
    cost = parseCost<Req>(l.cost, `${field}.cost`);
  }
  if (l.onStoreError === null) throw nullOption(`${field}.onStoreError`);
  const effective = leases ? 1 : (cost ?? sharedCost);
  // A constant cost is checked here, once: requests then charge it unchecked.
  if (!leases && typeof effective === 'number') checkCost(algorithm, effective);
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

/** A `maxCost` option: undefined (the capacity), or a number greater than 0 and at most the algorithm's capacity. */
function parseMaxCost(value: unknown, field: string, algorithm: Algorithm): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > algorithm.maxCost) {
    throw new InvalidOptionError(field, value, `a number greater than 0 and at most the ${algorithm.kind} capacity ${algorithm.maxCost}`);
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
