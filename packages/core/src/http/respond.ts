import type { IncomingHttpHeaders } from 'node:http';
import { checkCost, type Algorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import { reportsQuota, type Decision, type DecisionReason, type Policy } from '../decision.js';
import { parseDuration, type Duration } from '../duration.js';
import { InvalidKeyError, InvalidOptionError } from '../errors.js';
import { checkTimers, createLimiter, type LeaseDecision, type Limiter, type StoreErrorPolicy } from '../limiter/index.js';
import { systemTimers, type Timers } from '../timers.js';
import { checkOptions } from '../options.js';
import type { Store } from '../store.js';
import { HeaderWriter, parseHeaderFormat, type HeaderAccess, type HeaderFormat, type HeaderSource } from './headers.js';
import { hasForwardingHeader, ipKey, parseIPv6Subnet } from './keys.js';

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

/**
 * The framework-independent options of every adapter's `rateLimit()`. `Req` is what the key, cost
 * and skip functions receive: Express `req`, Fastify `request`, Koa `ctx`.
 */
export interface HttpRateLimitOptions<Req> {
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
  /** Requests for which this returns true pass without being counted and without headers. */
  skip?: SkipFunction<Req>;
  /** Header format: `'draft-8'` (default, also `true`), `'draft-7'`, `'draft-6'`, `'legacy'`, or `false`. Retry-After is always sent on a denial. */
  headers?: HeaderFormat | 'draft-9' | 'draft-10' | 'draft-11' | boolean;
  /** Required when a limit is a shaping leaky bucket (`mode: 'shape'`), and only then. */
  wait?: WaitOptions;
  /** Failure policy when the store fails or times out: `'deny'` (default; 503 with Retry-After), `'allow'` or `{ fallback }`. */
  onStoreError?: StoreErrorPolicy;
  /** Longest wait for a remote store before the failure policy applies (see `createLimiter`). */
  timeout?: Duration | false;
  /** Time source in ms for the algorithms (tests pass a fake clock). Default: the store's clock. */
  clock?: Clock;
  /** Prefix length grouping IPv6 clients under the default key (default 56); `false` keys whole addresses. */
  ipv6Subnet?: number | false;
  /** Where the store timeout and shaping holds get their time and timers. Default: Node's timers; tests pass `FakeTimers` from `@rl/core/testing`. */
  timers?: Timers;
}

/** What an adapter tells the http layer about its framework. */
export interface FrameworkBinding<Req> {
  /** Name of the factory in error messages, for example `rateLimit`. */
  readonly owner: string;
  /** Option names the adapter handles itself (accepted here, not interpreted). */
  readonly adapterOptions: readonly string[];
  /** The client IP as the framework resolves it under its trust-proxy setting. */
  clientIp(req: Req): string | undefined;
  /** The request headers. */
  requestHeaders(req: Req): IncomingHttpHeaders;
  /** True when the framework is configured to trust a proxy's forwarding headers. */
  trustsProxy(req: Req): boolean;
  /** How to configure trust proxy in this framework, for the warning. */
  readonly trustProxyAdvice: string;
  /** Creates the default store (a memory store) when the options give none. */
  createStore(): Store;
}

const CORE_OPTIONS = [
  'algorithm',
  'limits',
  'store',
  'prefix',
  'key',
  'cost',
  'skip',
  'headers',
  'wait',
  'onStoreError',
  'timeout',
  'clock',
  'ipv6Subnet',
  'timers',
] as const;
const LIMIT_OPTIONS = ['algorithm', 'name', 'key', 'cost', 'store', 'onStoreError'] as const;
const STATE_KINDS = new Set(['numeric', 'log', 'leases']);
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** Middlewares created so far in this process, per default namespace: makes default prefixes distinct and deterministic. */
const namespaceCounts = new Map<string, number>();

/**
 * Throws {@link InvalidOptionError} when `options` is not an object or names an option that neither
 * the http layer nor the adapter (`adapterOptions`) knows. For adapters that validate options whose
 * limits are only complete later (Fastify's `global: false` plugin options, completed per route).
 */
export function checkOptionNames(options: unknown, owner: string, adapterOptions: readonly string[]): Record<string, unknown> {
  return checkOptions(options, [...CORE_OPTIONS, ...adapterOptions], owner);
}

/** One limit as prepared at creation. */
interface PreparedLimit<Req> {
  readonly limiter: Limiter;
  readonly name: string;
  readonly policy: Policy;
  /** A concurrency limit: taken with `acquire`, released when the response ends. */
  readonly leases: boolean;
  /** This limit's own key function, or undefined to use the middleware's key (computed once per request). */
  readonly key: KeyFunction<Req> | undefined;
  /** This limit's own cost, or undefined to use the middleware's cost. */
  readonly cost: number | CostFunction<Req> | undefined;
}

const RESOLVED: Promise<void> = Promise.resolve();
/** A cost not computed yet (its function is called only once the key is known to be valid). */
const NOT_ASKED: unique symbol = Symbol('not asked');
/** The longest delay a Node timer supports (2^31 − 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;
/** Most IPv6 addresses whose key the default key function remembers. */
const IPV6_KEY_CACHE_SIZE = 10_000;

/**
 * The shared HTTP logic of the adapters, built once per middleware: it parses and validates the
 * options (throwing {@link InvalidOptionError} naming the field), creates the limiters, and for each
 * request runs the limits and returns a {@link RateLimitResult} saying what to send.
 *
 * Per request it does no option work: keys and costs are resolved without awaiting synchronous
 * functions, the memory store answers synchronously, header strings that depend only on the limits
 * are precomputed.
 */
export class HttpRateLimiter<Req> {
  /** The middleware's storage namespace. */
  readonly prefix: string;
  /** The limiters, in order (listen to their `'storeError'` events). */
  readonly limiters: readonly Limiter[];
  /** True when a limit is a concurrency limit: the adapter must call `result.release()` when the response ends. */
  readonly hasLeases: boolean;
  /** The longest hold for shaping, in ms (0 when no limit shapes). */
  readonly maxDelayMs: number;
  /** The header writer of this middleware. */
  readonly headers: HeaderWriter;
  /** The store this middleware created (closed by {@link close}), if any. */
  readonly ownedStore: Store | undefined;
  /** The timers of this middleware's holds (see {@link holdRequest}) and store timeouts. */
  readonly timers: Timers;

  private readonly limits: readonly PreparedLimit<Req>[];
  /** The only limit, when there is exactly one: {@link decide} takes a shorter path for it. */
  private readonly single: PreparedLimit<Req> | undefined;
  private readonly key: KeyFunction<Req>;
  private readonly cost: number | CostFunction<Req>;
  private readonly skip: SkipFunction<Req> | undefined;
  private readonly binding: FrameworkBinding<Req>;
  private readonly ipv6Subnet: number | false;
  private proxyWarned = false;
  /** IPv6 address → key, for the default key. */
  private readonly ipv6Keys = new Map<string, string>();

  constructor(options: HttpRateLimitOptions<Req>, binding: FrameworkBinding<Req>) {
    const owner = binding.owner;
    const o = checkOptions(options, [...CORE_OPTIONS, ...binding.adapterOptions], owner);
    this.binding = binding;

    if ((o.algorithm === undefined) === (o.limits === undefined)) {
      throw new InvalidOptionError(
        `${owner}.algorithm`,
        o.algorithm,
        'exactly one of algorithm (one limit) or limits (several), for example algorithm: tokenBucket({ capacity: 20, refillRate: 10 })',
      );
    }
    const limitOptions: LimitOptions<Req>[] = [];
    if (o.algorithm !== undefined) {
      checkAlgorithm(o.algorithm, `${owner}.algorithm`);
      limitOptions.push({ algorithm: o.algorithm as Algorithm });
    } else {
      if (!Array.isArray(o.limits) || o.limits.length === 0) {
        throw new InvalidOptionError(`${owner}.limits`, o.limits, 'a non-empty array of { algorithm, name?, key?, cost?, store?, onStoreError? }');
      }
      o.limits.forEach((limit: unknown, i: number) => {
        const field = `${owner}.limits[${i}]`;
        const l = checkOptions(limit, LIMIT_OPTIONS, field);
        checkAlgorithm(l.algorithm, `${field}.algorithm`);
        limitOptions.push(l as unknown as LimitOptions<Req>);
      });
    }

    this.key = optionalFunction<KeyFunction<Req>>(o.key, `${owner}.key`) ?? this.defaultKey;
    this.skip = optionalFunction<SkipFunction<Req>>(o.skip, `${owner}.skip`);
    this.cost = o.cost === undefined ? 1 : costOption(o.cost, `${owner}.cost`);
    this.ipv6Subnet = parseIPv6Subnet(o.ipv6Subnet, `${owner}.ipv6Subnet`);
    this.timers = o.timers === undefined ? systemTimers : checkTimers(o.timers, `${owner}.timers`);
    const format = parseHeaderFormat(o.headers, `${owner}.headers`);
    if (o.prefix !== undefined && (typeof o.prefix !== 'string' || o.prefix.length === 0)) {
      throw new InvalidOptionError(`${owner}.prefix`, o.prefix, 'a non-empty string');
    }

    // Names, then the namespace they define.
    const names: string[] = [];
    limitOptions.forEach((l, i) => {
      const field = o.limits !== undefined ? `${owner}.limits[${i}].name` : `${owner}.algorithm`;
      const name = l.name ?? l.algorithm.policy.name;
      if (typeof name !== 'string' || !PRINTABLE_ASCII.test(name)) throw new InvalidOptionError(field, name, 'a non-empty string of printable ASCII characters');
      if (names.includes(name)) {
        throw new InvalidOptionError(field, name, `a name unique within this middleware (two limits are named "${name}"; give each a name)`);
      }
      names.push(name);
    });

    // Shaping.
    const shapes = limitOptions.some((l) => l.algorithm.kind === 'leaky-bucket' && l.algorithm.params.shape === 1);
    if (o.wait === undefined) {
      if (shapes) throw new InvalidOptionError(`${owner}.wait`, undefined, "{ maxDelay } with a shaping leaky bucket (mode: 'shape'): the longest a request may be held");
      this.maxDelayMs = 0;
    } else {
      if (!shapes) throw new InvalidOptionError(`${owner}.wait`, o.wait, "no wait: it applies only to a shaping leaky bucket (leakyBucket({ ..., mode: 'shape' }))");
      const w = checkOptions(o.wait, ['maxDelay'], `${owner}.wait`);
      this.maxDelayMs = parseDuration(w.maxDelay, `${owner}.wait.maxDelay`);
      if (this.maxDelayMs > MAX_TIMER_MS) throw new InvalidOptionError(`${owner}.wait.maxDelay`, w.maxDelay, 'a duration of at most 24 days (the longest Node timer)');
    }

    // The namespace is taken only once the options are known to be valid (a rejected middleware takes no number).
    const defaultBase = o.prefix === undefined ? `rl:${names.join('+')}` : undefined;
    this.prefix = defaultBase === undefined ? (o.prefix as string) : takeDefaultPrefix(defaultBase);

    // Limiters, built once. The default store is created only when some limit needs it.
    let ownedStore: Store | undefined;
    const sharedStore = (): Store => {
      if (o.store !== undefined) return o.store as Store;
      ownedStore ??= binding.createStore();
      return ownedStore;
    };
    const several = limitOptions.length > 1;
    try {
      this.limits = this.prepareLimits(limitOptions, names, o, sharedStore, several);
    } catch (error) {
      if (defaultBase !== undefined) namespaceCounts.set(defaultBase, namespaceCounts.get(defaultBase)! - 1);
      void (ownedStore as Store | undefined)?.close?.();
      throw error;
    }
    this.ownedStore = ownedStore;
    this.limiters = this.limits.map((l) => l.limiter);
    this.hasLeases = this.limits.some((l) => l.leases);
    this.single = this.limits.length === 1 ? this.limits[0] : undefined;
    this.headers = new HeaderWriter(format, this.limits);
  }

  /** Validates each limit's own options (key, cost) and creates its limiter in this middleware's namespace. */
  private prepareLimits(
    limitOptions: readonly LimitOptions<Req>[],
    names: readonly string[],
    o: Record<string, unknown>,
    sharedStore: () => Store,
    several: boolean,
  ): PreparedLimit<Req>[] {
    const owner = this.binding.owner;
    return limitOptions.map((l, i): PreparedLimit<Req> => {
      const field = o.limits !== undefined ? `${owner}.limits[${i}]` : owner;
      const leases = l.algorithm.stateKind === 'leases';
      const key = optionalFunction<KeyFunction<Req>>(l.key, `${field}.key`);
      let cost: number | CostFunction<Req> | undefined;
      if (l.cost !== undefined) {
        if (leases) throw new InvalidOptionError(`${field}.cost`, l.cost, 'no cost on a concurrency limit: a request holds one permit');
        cost = costOption(l.cost, `${field}.cost`);
      }
      const effectiveCost = cost ?? this.cost;
      if (!leases && typeof effectiveCost === 'number') checkCost(l.algorithm, effectiveCost);
      const limiter = createLimiter({
        algorithm: l.algorithm,
        store: l.store ?? sharedStore(),
        prefix: several ? `${this.prefix}:${names[i]}` : this.prefix,
        clock: o.clock as Clock | undefined,
        timeout: o.timeout as Duration | false | undefined,
        timers: this.timers,
        onStoreError: l.onStoreError ?? (o.onStoreError as StoreErrorPolicy | undefined),
      });
      return { limiter, name: names[i]!, policy: l.algorithm.policy, leases, key, cost };
    });
  }

  /**
   * Runs the limits for one request. Resolves `undefined` when `skip` says so; otherwise a result
   * that is admitted (maybe with a delay to hold) or denied (429, or 503 when a fail-closed store
   * failed). Rejects when the key or cost function throws or returns a bad value: then no limit
   * was charged. Units admitted by earlier limits are given back when a later one denies.
   */
  evaluate(req: Req): Promise<RateLimitResult | undefined> {
    try {
      const result = this.decide(req);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link evaluate} for adapters, without a promise when none is needed: with one limit on a local
   * store (`limiter.synchronous`, such as the memory store) and key, cost and skip functions that
   * return plain values, the result (or `undefined` when skipped) is returned directly, so the
   * adapter continues in the same tick; otherwise a promise of it. On the direct path a bad key or
   * cost (or a throwing function) throws instead of rejecting; either way no limit was charged.
   */
  decide(req: Req): RateLimitResult | undefined | Promise<RateLimitResult | undefined> {
    const skip = this.skip;
    if (skip !== undefined) {
      const skipped = skip(req);
      if (typeof skipped !== 'boolean') return this.afterSkip(req, skipped);
      if (skipped) return undefined;
    }
    const single = this.single;
    return single === undefined ? this.evaluateAll(req) : this.evaluateSingle(req, single);
  }

  /** The rest of {@link decide} once an asynchronous `skip` has answered. */
  private async afterSkip(req: Req, skipped: unknown): Promise<RateLimitResult | undefined> {
    if (await skipped) return undefined;
    const single = this.single;
    return single === undefined ? this.evaluateAll(req) : this.evaluateSingle(req, single);
  }

  /** One limit: no loop and no await while the key, the cost and the limiter are synchronous. */
  private evaluateSingle(req: Req, limit: PreparedLimit<Req>): RateLimitResult | Promise<RateLimitResult> {
    const key: unknown = (limit.key ?? this.key)(req);
    if (typeof key !== 'string') return this.evaluateSingleAsync(req, limit, key, NOT_ASKED);
    if (key.length === 0) throw new InvalidKeyError(key);
    if (limit.leases) return this.decideSingle(limit, key, 1);
    const option = limit.cost ?? this.cost;
    const cost: unknown = typeof option === 'number' ? option : option(req);
    if (typeof cost !== 'number') return this.evaluateSingleAsync(req, limit, key, cost);
    const limiter = limit.limiter;
    checkCost(limiter.algorithm, cost);
    if (!limiter.synchronous) return this.decideSingle(limit, key, cost);
    return this.singleResult(key, cost, limiter.consumeSync(key, cost));
  }

  /** {@link evaluateSingle} once the key or the cost turned out to be a promise (`cost` is {@link NOT_ASKED} until asked). */
  private async evaluateSingleAsync(req: Req, limit: PreparedLimit<Req>, pendingKey: unknown, pendingCost: unknown): Promise<RateLimitResult> {
    const key: unknown = await pendingKey;
    if (typeof key !== 'string' || key.length === 0) throw new InvalidKeyError(key);
    if (limit.leases) return this.decideSingle(limit, key, 1);
    let cost = pendingCost;
    if (cost === NOT_ASKED) {
      const option = limit.cost ?? this.cost;
      cost = typeof option === 'number' ? option : option(req);
    }
    if (typeof cost !== 'number') cost = await cost;
    checkCost(limit.limiter.algorithm, cost as number);
    return this.decideSingle(limit, key, cost as number);
  }

  /**
   * Takes the single limit's decision from an asynchronous limiter (a remote store, or a concurrency
   * permit), or from a synchronous one after an asynchronous key or cost (then it runs inside
   * {@link evaluateSingleAsync}, where a throw is a rejection).
   */
  private decideSingle(limit: PreparedLimit<Req>, key: string, cost: number): RateLimitResult | Promise<RateLimitResult> {
    const limiter = limit.limiter;
    if (limit.leases) return limiter.acquire(key).then((decision) => this.singleResult(key, cost, decision));
    if (limiter.synchronous) return this.singleResult(key, cost, limiter.consumeSync(key, cost));
    return limiter.consume(key, cost).then((decision) => this.singleResult(key, cost, decision));
  }

  /** The result of the single limit's decision (what {@link evaluateAll} computes for one limit). */
  private singleResult(key: string, cost: number, decision: Decision): RateLimitResult | Promise<RateLimitResult> {
    const keys = [key];
    const costs = [cost];
    const decisions = [decision];
    if (!decision.allowed) return new RateLimitResult(this, keys, costs, decisions, 0, 0, decision.retryAfterMs, true);
    if (decision.delayMs > this.maxDelayMs) {
      // The queue is longer than the client may wait: reject now, give the slot back.
      const retryAfterMs = decision.delayMs - this.maxDelayMs;
      return this.giveBack(keys, costs, decisions).then(() => new RateLimitResult(this, keys, costs, decisions, 0, 0, retryAfterMs, true));
    }
    return new RateLimitResult(this, keys, costs, decisions, -1, 0, 0, false);
  }

  /** The general path: several limits. */
  private async evaluateAll(req: Req): Promise<RateLimitResult | undefined> {
    const limits = this.limits;
    const n = limits.length;
    const keys = new Array<string>(n);
    const costs = new Array<number>(n);
    let sharedKey: string | undefined;
    let sharedCost: number | undefined;
    // Every key and cost is resolved and checked before any limit is charged.
    for (let i = 0; i < n; i++) {
      const limit = limits[i]!;
      let key: string | undefined = limit.key === undefined ? sharedKey : undefined;
      if (key === undefined) {
        let k: unknown = (limit.key ?? this.key)(req);
        if (typeof k !== 'string') k = await k;
        if (typeof k !== 'string' || k.length === 0) throw new InvalidKeyError(k);
        key = k;
        if (limit.key === undefined) sharedKey = key;
      }
      keys[i] = key;
      if (limit.leases) {
        costs[i] = 1;
        continue;
      }
      let cost: number | undefined = limit.cost === undefined ? sharedCost : undefined;
      if (cost === undefined) {
        const option = limit.cost ?? this.cost;
        let c: unknown = typeof option === 'number' ? option : option(req);
        if (typeof c !== 'number') c = await c;
        cost = c as number;
        if (limit.cost === undefined) sharedCost = cost;
      }
      checkCost(limit.limiter.algorithm, cost);
      costs[i] = cost;
    }

    const decisions = new Array<Decision | undefined>(n);
    let deniedBy = -1;
    let delayMs = 0;
    let shapedBy = -1;
    try {
      for (let i = 0; i < n; i++) {
        const limit = limits[i]!;
        const limiter = limit.limiter;
        // A local store answers synchronously: no promise and no microtask per limit.
        const decision = limit.leases
          ? await limiter.acquire(keys[i]!)
          : limiter.synchronous
            ? limiter.consumeSync(keys[i]!, costs[i])
            : await limiter.consume(keys[i]!, costs[i]);
        decisions[i] = decision;
        if (!decision.allowed) {
          deniedBy = i;
          break;
        }
        if (decision.delayMs > delayMs) {
          delayMs = decision.delayMs;
          shapedBy = i;
        }
      }
    } catch (error) {
      await this.giveBack(keys, costs, decisions);
      throw error;
    }
    if (deniedBy !== -1) {
      // Only limits before the denying one can have taken something.
      if (deniedBy > 0) await this.giveBack(keys, costs, decisions);
      const denial = decisions[deniedBy]!;
      return new RateLimitResult(this, keys, costs, decisions, deniedBy, deniedBy, denial.retryAfterMs, true);
    }
    if (delayMs > this.maxDelayMs) {
      // The queue is longer than the client may wait: reject now, give the slot back.
      await this.giveBack(keys, costs, decisions);
      return new RateLimitResult(this, keys, costs, decisions, shapedBy, shapedBy, delayMs - this.maxDelayMs, true);
    }
    let binding = 0;
    for (let i = 1; i < n; i++) {
      const d = decisions[i]!;
      const b = decisions[binding]!;
      if ((d.remaining < b.remaining && reportsQuota(d)) || !reportsQuota(b)) binding = i;
    }
    return new RateLimitResult(this, keys, costs, decisions, -1, binding, 0, false);
  }

  /**
   * Writes Retry-After (when denied) and the RateLimit headers of the configured format. `first`:
   * see {@link HeaderWriter.write} (true when the adapter knows no earlier rl middleware wrote on
   * this response; omitted, `access.claim` decides).
   */
  writeHeaders<T>(access: HeaderAccess<T>, target: T, result: RateLimitResult, first?: boolean): void {
    this.headers.write(access, target, result, first);
  }

  /** Forgets `key` in every limit (for example after a successful login). */
  async resetKey(key: string): Promise<void> {
    await Promise.all(this.limiters.map((limiter) => limiter.reset(key)));
  }

  /** Closes the store this middleware created (a store passed in options is left open). */
  async close(): Promise<void> {
    await this.ownedStore?.close?.();
  }

  /**
   * Gives back what admitted limits took for one request: concurrency permits (release) and, unless
   * `permitsOnly`, rate units (undo). Decisions of the failure policy took nothing from the store.
   */
  async giveBack(keys: readonly string[], costs: readonly number[], decisions: readonly (Decision | undefined)[], permitsOnly = false): Promise<void> {
    const limits = this.limits;
    for (let i = 0; i < decisions.length; i++) {
      const decision = decisions[i];
      if (decision === undefined || !decision.allowed) continue;
      const limit = limits[i]!;
      if (limit.leases) await (decision as LeaseDecision).release();
      else if (!permitsOnly && decision.reason === undefined) await limit.limiter.undo(keys[i]!, costs[i]);
    }
  }

  /** The default key: the client IP under the framework's trust-proxy setting, IPv6 grouped. */
  private readonly defaultKey = (req: Req): string => {
    const binding = this.binding;
    if (!this.proxyWarned && hasForwardingHeader(binding.requestHeaders(req)) && !binding.trustsProxy(req)) {
      this.proxyWarned = true;
      process.emitWarning(
        `A request carries X-Forwarded-For but trust proxy is not configured, so the rate limit keys every client behind the proxy on the proxy's address. ${binding.trustProxyAdvice}, or pass key(req). (rl ${binding.owner}, warned once per middleware.)`,
        { code: 'RL_TRUST_PROXY' },
      );
    }
    const ip = binding.clientIp(req);
    if (typeof ip !== 'string' || ip.length === 0) {
      throw new InvalidKeyError(ip, "the framework reports no client IP for this request (a closed socket, or a proxy setup that hides it); give the middleware a `key` function");
    }
    if (ip.indexOf(':') === -1) return ip;
    // IPv6 parsing costs a few µs: remember recent addresses (bounded; cleared when full).
    const cache = this.ipv6Keys;
    let key = cache.get(ip);
    if (key === undefined) {
      if (cache.size >= IPV6_KEY_CACHE_SIZE) cache.clear();
      key = ipKey(ip, this.ipv6Subnet);
      cache.set(ip, key);
    }
    return key;
  };
}

/**
 * The outcome of the limits for one request, handed to handlers as `req.rateLimit` (Express),
 * `request.rateLimit` (Fastify) or `ctx.state.rateLimit` (Koa). Its decision fields are those of
 * the binding limit: the one that denied, or the one with the fewest remaining.
 */
export class RateLimitResult implements HeaderSource {
  /** True when the request may proceed (after `delayMs`). */
  readonly allowed: boolean;
  /** 429 when a limit denied, 503 when a fail-closed store failure denied; 200 when admitted. */
  readonly statusCode: 200 | 429 | 503;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the binding limit's full quota is back. */
  readonly resetMs: number;
  /** 0 when admitted; otherwise milliseconds until a retry could be admitted. */
  readonly retryAfterMs: number;
  /** Retry-After in whole seconds, rounded up, at least 1, when denied; 0 when admitted. */
  readonly retryAfterSeconds: number;
  /** Milliseconds the request is held before proceeding (shaping); 0 otherwise. */
  readonly delayMs: number;
  readonly policy: Policy;
  /** Set when the binding decision did not come from the store (see `DecisionReason`). */
  readonly reason: DecisionReason | undefined;
  /** The binding limit's key. */
  readonly key: string;
  /** Each limit's key, cost and decision, in the order of the limits; `undefined` for limits not asked after a denial. */
  readonly keys: readonly string[];
  readonly costs: readonly number[];
  readonly decisions: readonly (Decision | undefined)[];
  /** Index of the limit that denied (or whose delay exceeded `wait.maxDelay`); -1 when admitted. */
  readonly deniedBy: number;
  /** Index of the binding limit. */
  readonly binding: number;
  /** True when the units admitted for this request were given back (it was rejected or abandoned). */
  rolledBack: boolean;
  // ES private fields: not enumerable, so logging or serialising the result shows only its data.
  readonly #owner: HttpRateLimiter<never>;
  #settled: boolean;

  constructor(
    owner: HttpRateLimiter<never>,
    keys: readonly string[],
    costs: readonly number[],
    decisions: readonly (Decision | undefined)[],
    deniedBy: number,
    binding: number,
    retryAfterMs: number,
    rolledBack: boolean,
  ) {
    const d = decisions[binding]!;
    const denied = deniedBy !== -1;
    this.#owner = owner;
    this.allowed = !denied;
    this.statusCode = !denied ? 200 : !d.allowed && (d.reason === 'store-error' || d.reason === 'timeout') ? 503 : 429;
    this.limit = d.limit;
    this.remaining = d.remaining;
    this.resetMs = d.resetMs;
    this.retryAfterMs = retryAfterMs;
    this.retryAfterSeconds = denied ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : 0;
    this.delayMs = denied ? 0 : maxDelay(decisions);
    this.policy = d.policy;
    this.reason = d.reason;
    this.key = keys[binding]!;
    this.keys = keys;
    this.costs = costs;
    this.decisions = decisions;
    this.deniedBy = deniedBy;
    this.binding = binding;
    this.rolledBack = rolledBack;
    // A denied request holds nothing: there is nothing to release.
    this.#settled = denied;
  }

  /**
   * Releases the concurrency permits this request holds. Adapters call it when the response
   * finishes, the connection closes or the handler throws; only the first call does anything.
   */
  release(): Promise<void> {
    if (this.#settled) return RESOLVED;
    this.#settled = true;
    if (!this.#owner.hasLeases) return RESOLVED;
    return this.#owner.giveBack(this.keys, this.costs, this.decisions, true);
  }

  /** The client left before the request proceeded (while held): gives back every unit and permit it took. */
  abandon(): Promise<void> {
    if (this.#settled) return RESOLVED;
    this.#settled = true;
    this.rolledBack = true;
    return this.#owner.giveBack(this.keys, this.costs, this.decisions);
  }
}

function maxDelay(decisions: readonly (Decision | undefined)[]): number {
  let delay = 0;
  for (const d of decisions) if (d !== undefined && d.delayMs > delay) delay = d.delayMs;
  return delay;
}

/** The parts of a Node `ServerResponse` used to notice that the client went away. */
export interface CloseNotifier {
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  readonly destroyed?: boolean;
}

/**
 * Holds a request for `delayMs`. Resolves true when the time has passed, false as soon as the
 * response closes first (the client disconnected): then no timer and no listener is left behind.
 */
export function holdRequest(res: CloseNotifier, delayMs: number, timers: Timers = systemTimers): Promise<boolean> {
  if (res.destroyed === true) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onClose = (): void => {
      timers.clearTimeout(timer);
      resolve(false);
    };
    const timer = timers.setTimeout(() => {
      res.removeListener('close', onClose);
      resolve(true);
    }, delayMs);
    res.once('close', onClose);
  });
}

/** Content type of the default denial body (RFC 9457 problem details). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The last body {@link problemBody} built. */
const lastProblem = { seconds: -1, status: 0, body: '' };

/**
 * The default denial body, RFC 9457 problem details:
 * `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"…","retryAfter":12}`
 * (`retryAfter` in seconds, equal to the Retry-After header). 503 when a fail-closed store failed.
 */
export function problemBody(result: RateLimitResult): string {
  const seconds = result.retryAfterSeconds;
  const status = result.statusCode;
  // A flood of denials mostly repeats the same body: the last one is kept.
  if (seconds === lastProblem.seconds && status === lastProblem.status) return lastProblem.body;
  const when = `Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;
  const body =
    status === 503
      ? `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The rate limiter cannot reach its store. ${when}","retryAfter":${seconds}}`
      : `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded. ${when}","retryAfter":${seconds}}`;
  lastProblem.seconds = seconds;
  lastProblem.status = status;
  lastProblem.body = body;
  return body;
}

function checkAlgorithm(value: unknown, field: string): void {
  if (!value || typeof value !== 'object' || !STATE_KINDS.has((value as Algorithm).stateKind) || !(value as Algorithm).policy) {
    throw new InvalidOptionError(field, value, 'an algorithm such as tokenBucket({ capacity: 20, refillRate: 10 }) or fixedWindow({ limit: 100, window: \'1m\' })');
  }
}

function optionalFunction<F>(value: unknown, field: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new InvalidOptionError(field, value, 'a function of the request');
  return value as F;
}

function costOption<Req>(value: unknown, field: string): number | CostFunction<Req> {
  if (typeof value === 'function') return value as CostFunction<Req>;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidOptionError(field, value, 'a finite number greater than 0, or a function of the request returning one');
  }
  return value;
}

/** `rl:<names>`, then `rl:<names>#2`, `#3`, … for later middlewares with the same limits in this process. */
function takeDefaultPrefix(base: string): string {
  const count = (namespaceCounts.get(base) ?? 0) + 1;
  namespaceCounts.set(base, count);
  return count === 1 ? base : `${base}#${count}`;
}
