import type { AdaptiveConcurrency } from '../adaptive/adaptive-concurrency.js';
import type { Priority } from '../adaptive/priority.js';
import type { Algorithm } from '../algorithm.js';
import type { Duration } from '../duration.js';
import type { LeaseOptions, LimiterOptions, StoreErrorPolicy } from '../limiter/index.js';
import type { Observer } from '../observe/observer.js';
import type { Store } from '../store/interface.js';
import type { Timers } from '../timers.js';
import type { HeaderFormat } from './headers.js';

/** Returns the key of a request (sync or async): requests with the same key share a limit. */
export type KeyFunction<Req> = (req: Req) => string | Promise<string>;
/** Returns the cost of a request in units (sync or async): a finite number greater than 0. */
export type CostFunction<Req> = (req: Req) => number | Promise<number>;
/**
 * Returns the real cost of a request once its response has finished (sync or async): a finite number
 * of 0 or more, for example from a response header the handler set. Express `(req, res)`, Fastify
 * `(request, reply)`, Koa `(ctx)`.
 */
export type ActualCostFunction<Req, Res = unknown> = (req: Req, res: Res) => number | Promise<number>;
/** Returns a request's idempotency key (synchronously), or undefined for none: see {@link HttpRateLimitOptions.idempotencyKey}. */
export type IdempotencyKeyFunction<Req> = (req: Req) => string | undefined;
/** Returns what makes a retry the same request (synchronously): see {@link HttpRateLimitOptions.idempotencyFingerprint}. */
export type FingerprintFunction<Req> = (req: Req) => string;
/** Returns true (sync or async) for requests the limits do not apply to. */
export type SkipFunction<Req> = (req: Req) => boolean | Promise<boolean>;
/** Whether to deny the request without asking any limit (a list kept elsewhere): false, true (for an hour), or for how long (a duration). */
export type DenyFunction<Req> = (req: Req) => boolean | Duration | Promise<boolean | Duration>;
/**
 * Returns the rate algorithm of a request (sync or async): a plan, a tier, a customer's quota. See
 * {@link LimitOptions.algorithm}.
 */
export type AlgorithmFunction<Req> = (req: Req) => Algorithm | Promise<Algorithm>;

/**
 * Returns the class of a request for the `adaptive` limit, synchronously: `'critical'`, `'normal'`,
 * `'sheddable'`, or a share of the limit in (0, 1] (see `Priority`).
 */
export type PriorityFunction<Req> = (req: Req) => Priority;

/** One limit among several (`limits`), for example a global limit, one per tenant and one per user. */
export interface LimitOptions<Req, Res = unknown> {
  /**
   * The algorithm (from one of `ALGORITHM_FACTORIES`: `tokenBucket({ capacity: 20, refillRate: 10 })`,
   * `concurrency({ limit: 50 })`, …); or a function of the request returning the rate algorithm of that
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
  /** This limit's quota leases (see `LimiterOptions.lease`); default: the middleware's `lease` (for a rate limit). */
  lease?: LeaseOptions;
  /**
   * This limit's real cost, learned once the response has finished (see
   * {@link HttpRateLimitOptions.actualCost}); default: the middleware's, when this limit takes the
   * middleware's `cost`. Not on a concurrency limit.
   */
  actualCost?: ActualCostFunction<Req, Res>;
  /** How far a settle may take this limit past its quota (see `LimiterOptions.maxDebt`); default: the middleware's `maxDebt`. */
  maxDebt?: number;
  /** This limit's idempotency key (see {@link HttpRateLimitOptions.idempotencyKey}); default: the middleware's. Not on a concurrency limit. */
  idempotencyKey?: IdempotencyKeyFunction<Req>;
  /** This limit's fingerprint of a retry; default: the middleware's. */
  idempotencyFingerprint?: FingerprintFunction<Req>;
}

/** Waiting: hold requests until the slots their limits reserve. */
export interface WaitOptions {
  /**
   * Longest hold, at most what every limit's algorithm can queue (its `maxReserveMs`: a window; a
   * leaky bucket's drain; a token bucket, 24 days; an `InvalidOptionError` at creation otherwise). A
   * request that would wait longer is rejected at once with 429 and takes nothing.
   */
  maxDelay: Duration;
}

/** The options of `createLimiter` that the HTTP layer passes through to every limit's limiter. */
export const PASSED_LIMITER_OPTIONS = [
  ...([
    'timeout',
    'clock',
    'onStoreError',
    'denyCache',
    'storeRetryInterval',
    'storeFailureThreshold',
    'blockDuration',
  ] as const),
  ...(['bans', 'overrides', 'maxDebt', 'idempotencyTtl', 'idempotencyMaxIds', 'idempotencyMaxReplays'] as const),
];
export type PassedLimiterOptions = (typeof PASSED_LIMITER_OPTIONS)[number];

/**
 * The framework-independent options of every adapter's `rateLimit()`. `Req` is what the key, cost
 * and skip functions receive: Express `req`, Fastify `request`, Koa `ctx`. The limiter options
 * (`timeout`, `clock`, `onStoreError`, `denyCache`, `storeRetryInterval`, `storeFailureThreshold`,
 * `blockDuration`: a lockout after a denial, with Retry-After and the RateLimit `t` at its end; `bans`:
 * each key's ban checked, for `blockKey` on the handle; `overrides`: each key's override checked, for
 * `setOverride` on the handle) apply to every limit, as in `createLimiter`.
 */
export interface HttpRateLimitOptions<Req, Res = unknown> extends Pick<LimiterOptions, PassedLimiterOptions> {
  /** The algorithm of a single limit, or a function of the request choosing it (see {@link LimitOptions.algorithm}). Give either `algorithm` or `limits`, or neither with {@link adaptive} alone. */
  algorithm?: Algorithm | AlgorithmFunction<Req>;
  /** Several limits applied together: a request is admitted only when all admit; a denial uses no quota in the others. */
  limits?: readonly LimitOptions<Req, Res>[];
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
  /** A deny list kept elsewhere: `true` (an hour) or a duration answers the 429 of a ban, no limit asked or charged; after `skip`. */
  deny?: DenyFunction<Req>;
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
   * `requestWasSuccessful`): their units are given back when the response has been sent. A request
   * whose client left before its response finished stays counted (its handler may still be running:
   * giving its units back at the abort would let a client that aborts each request run any number of
   * handlers). Default false.
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
  /** Where the store timeout and shaping holds get their time and timers. Default: Node's timers; tests pass `FakeTimers` from `@rl/core/simulation`. */
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
   * Quota leases of every rate limit (a limit's own `lease` replaces it): each instance takes blocks of
   * `units` from a key's shared quota and admits from them locally (see `LimiterOptions.lease`). Not
   * with `wait` (reservations take their slots in the store).
   */
  lease?: LeaseOptions;
  /**
   * The request's real cost, called once its response has finished (not when the client left: the
   * estimate then stands), for every rate limit that takes this middleware's `cost` (a limit with a
   * `cost` of its own gives its own `actualCost`). `cost` is the estimate charged, and checked, on
   * arrival; the difference is then charged or given back in one store call, in the window the
   * request was charged in (see `Limiter.settle`; a charge never past `maxDebt`). A handler may settle
   * sooner itself, `result.settle(n)` (for example as a stream ends), and `actualCost` is then not
   * called. A bad answer (not a finite number of 0 or more, a throw, a rejection) is an
   * `InvalidCostError` on the framework's path for errors after a response, and the estimate stands.
   */
  actualCost?: ActualCostFunction<Req, Res>;
  /**
   * The request's idempotency key, for every rate limit (a limit's own replaces it), synchronously;
   * undefined for none. `idempotencyKeyHeader` of each adapter reads the `Idempotency-Key` header
   * (draft-ietf-httpapi-idempotency-key-header). A request with the key of an earlier one of the same
   * key and limit, within `idempotencyTtl` (default 10 minutes), gets the earlier admitting decision
   * back with the current headers (`result.replayed`), and is charged nothing; a denied request's
   * retry is decided afresh (a denial is never replayed). A key reused by a request of another
   * fingerprint is charged as new (`result.idempotencyConflict`). Use it where the API honours the
   * key itself (a retry does no new work): a client can replay one admitted request as often as it likes.
   */
  idempotencyKey?: IdempotencyKeyFunction<Req>;
  /** What makes a retry the same request, synchronously; default: the method, the path and the cost. */
  idempotencyFingerprint?: FingerprintFunction<Req>;
  /**
   * Log a store outage once (when the store of a limit starts failing, and when it answers again):
   * `true` (default) on the framework's logger where it has one (Fastify), else the console; `false`
   * for none (then listen to `middleware.on('storeError', …)` or use an observer).
   */
  logStoreErrors?: boolean;
  /**
   * An adaptive concurrency limit beside the rate limits (`adaptiveConcurrency({ min, max })` from
   * `@rl/core`): a request the rate limits admit takes one of its permits, released when its response
   * ends, with the time from admission to that end as its latency (a response that never finished, or
   * a 503 or 504, is failed work). None free: the request is refused with 503, Retry-After and a
   * `temporary-reduced-capacity` problem body (an overload, not a quota), and its rate limits' units
   * are given back. Per process, in memory; one limit may be given to several middlewares (one backend).
   * Alone (no `algorithm`, no `limits`), the middleware is the adaptive limit only: every request not
   * skipped takes a permit, and the responses carry no RateLimit headers (`result.limit` and
   * `remaining` are Infinity, its policy `none`).
   */
  adaptive?: AdaptiveConcurrency;
  /** The request's class for `adaptive` (default `'normal'`): as the limit tightens, the lowest class is refused first. Only with `adaptive`. */
  priority?: PriorityFunction<Req>;
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
  /** Where the `maxCost` that bounds this limit is set (`rateLimit.maxCost`, `rateLimit.limits[1].maxCost`): what a cost above it is told to raise. */
  readonly maxCostField: string;
  /** This limit's own store; undefined: the middleware's. */
  readonly store: Store | undefined;
  /** This limit's own failure policy; undefined: the middleware's. */
  readonly onStoreError: StoreErrorPolicy | undefined;
  /** This limit's quota leases, its own or the middleware's; undefined: none. */
  readonly lease: LeaseOptions | undefined;
  /** This limit's real cost after the response, its own or the middleware's; undefined: none. */
  readonly actualCost: ActualCostFunction<Req> | undefined;
  /** This limit's own `maxDebt`; undefined: the middleware's. */
  readonly maxDebt: unknown;
  /** This limit's idempotency key, its own or the middleware's; undefined: none. */
  readonly idempotencyKey: IdempotencyKeyFunction<Req> | undefined;
  /** This limit's fingerprint, its own or the middleware's; undefined: the default. */
  readonly idempotencyFingerprint: FingerprintFunction<Req> | undefined;
}

/** The options of one middleware, parsed and validated once (frozen). */
export interface HttpConfig<Req> {
  /** The factory name in error messages, for example `rateLimit`. */
  readonly owner: string;
  readonly limits: readonly LimitConfig<Req>[];
  /** The middleware's key function; undefined: the default key (the client IP). */
  readonly key: KeyFunction<Req> | undefined;
  readonly skip: SkipFunction<Req> | undefined;
  readonly deny: DenyFunction<Req> | undefined;
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
  /** The adaptive concurrency limit beside the rate limits; undefined: none. */
  readonly adaptive: AdaptiveConcurrency | undefined;
  /** The request's class for {@link adaptive}; undefined: `normal`. */
  readonly priority: PriorityFunction<Req> | undefined;
  /** The limiter options passed through to every limit's limiter (validated by `createLimiter`). */
  readonly limiterOptions: Readonly<Pick<LimiterOptions, PassedLimiterOptions>>;
}
