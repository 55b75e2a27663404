import { Composition } from '../compose/engine.js';
import { coreOf } from '../limiter/core-registry.js';
import type { CircuitChange, LimiterOptions, StoreErrorEvent } from '../limiter/index.js';
import { keyControls, type KeyControls } from './key-controls.js';
import { Limiter } from '../limiter/limiter.js';
import { requireCapability } from '../limiter/capabilities.js';
import { consoleLogger, OutageLog } from './outage-log.js';
import type { MaybePromise, Store } from '../store/interface.js';
import type { FrameworkBinding } from './binding.js';
import { DefaultKey } from './default-key.js';
import { DefaultStore } from './default-store.js';
import { withAdaptiveAdmission } from './adaptive-admission.js';
import { DoubleCountCheck } from './double-count.js';
import { Evaluation } from './evaluate.js';
import { HeaderWriter } from './headers.js';
import type { HttpConfig, HttpRateLimitOptions, LimitConfig } from './option-types.js';
import { parseHttpOptions } from './options.js';
import { processPrefixes, type PrefixRegistry } from './prefixes.js';
import { ProblemBodies } from './problem.js';
import type { ResponsePolicy } from './responder.js';
import { RateLimitResult } from './result.js';

/**
 * The shared HTTP logic of the adapters, built once per middleware: it parses and validates the
 * options once (throwing {@link InvalidOptionError} naming the field), creates the limiters, and for
 * each request runs the limits through the composition engine and returns a {@link RateLimitResult}
 * saying what to send.
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
  /** The store this middleware created (closed by {@link close}), if any. */
  readonly ownedStore: Store | undefined;
  /** Each limit's name, in order. */
  readonly limitNames: readonly string[];
  /** What the adapter's `Responder` needs of this middleware (frozen). */
  readonly response: ResponsePolicy;
  /**
   * Adapters call `doubleCount.check(previous)` when they record a result on a request that already
   * carries an earlier rl result: warns `RL_DOUBLE_COUNT` when a limit of the same name ran on it twice.
   */
  readonly doubleCount: DoubleCountCheck;

  private readonly evaluation: Evaluation<Req>;
  /** The store this middleware creates when its options give none (closed by {@link close}). */
  private readonly defaultStore: DefaultStore;

  /** `prefixes`: where a default prefix is taken (default: this process's registry). */
  constructor(
    options: HttpRateLimitOptions<Req, never>,
    binding: FrameworkBinding<Req>,
    prefixes: PrefixRegistry = processPrefixes,
  ) {
    const config = parseHttpOptions(options, binding.owner, binding.adapterOptions);
    binding.checkAdapterOptions?.(
      options as unknown as Record<string, unknown>,
      config.skipFailed || config.skipSuccessful,
    );
    this.maxDelayMs = config.maxDelayMs;

    // The namespace is taken only once the options are known to be valid (a rejected middleware takes no number).
    // Without rate limits (an `adaptive` limit alone) nothing is stored: no namespace is taken.
    const defaultBase =
      config.prefix === undefined && config.limits.length > 0
        ? `rl:${config.limits.map((l) => l.name).join('+')}`
        : undefined;
    this.prefix = defaultBase === undefined ? (config.prefix ?? '') : prefixes.take(defaultBase);

    // The default store is created only when some limit needs it.
    this.defaultStore = new DefaultStore(() => binding.createStore());
    try {
      this.limiters = config.limits.map(
        (limit, i) =>
          new Limiter(
            limiterOptions(config, limit, this.prefix, limit.store ?? this.defaultStore.storeFor(config.store)),
            limiterField(config, i),
          ),
      );
      config.limits.forEach((l, i) => {
        const store = this.limiters[i]!.store;
        if (l.idempotencyKey !== undefined)
          requireCapability(store, 'idempotency', `${limiterField(config, i)}.idempotencyKey`);
        if (l.actualCost !== undefined) requireCapability(store, 'settle', `${limiterField(config, i)}.actualCost`);
      });
    } catch (error) {
      if (defaultBase !== undefined) prefixes.giveBack(defaultBase);
      void this.defaultStore.close();
      throw error;
    }
    this.ownedStore = this.defaultStore.created;
    this.limitNames = config.limits.map((l) => l.name);
    const cores = this.limiters.map((limiter) => coreOf(limiter)!);
    if (config.observer !== undefined) {
      config.limits.forEach((limit, i) =>
        cores[i]!.observe(config.observer!, {
          limit: limit.name,
          keys: config.observeKeys,
          dryRun: limit.dryRun,
          field: `${config.owner}.observer`,
        }),
      );
    }
    if (config.logStoreErrors)
      new OutageLog(
        config.limits.map((l, i) => ({ limiter: this.limiters[i]!, name: l.name })),
        binding.logger ?? consoleLogger,
      );

    const dryRun = config.limits.map((l) => l.dryRun);
    // Each result knows its middleware, for the double-count check of a later one on the same request.
    // One real cost given to `result.settle(n)` settles the limits with an `actualCost`, or every limit when none has one.
    const actualCosts = config.limits.some((l) => l.actualCost !== undefined)
      ? config.limits.map((l) => l.actualCost)
      : undefined;
    const settles = actualCosts?.map((f) => f !== undefined);
    const idempotent = config.limits.some((l) => l.idempotencyKey !== undefined);
    const headerNames = config.limits.map((l) => l.headerName);
    const source = {
      limitNames: this.limitNames,
      allDryRun: !dryRun.includes(false),
      settles,
      idempotent,
      headerNames,
    };
    this.doubleCount = new DoubleCountCheck(source);
    const composition = new Composition<RateLimitResult>(
      this.limiters,
      (run, of) => new RateLimitResult(run, of, source),
      { maxDelayMs: config.maxDelayMs, dryRun, idempotent },
    );
    // An adaptive permit is held to the response's end, as a concurrency limit's.
    this.hasLeases = composition.hasLeases || config.adaptive !== undefined;
    const sharedKey = config.key ?? new DefaultKey(binding, config.ipv6Subnet).of;
    this.evaluation = new Evaluation(
      config.limits,
      { key: sharedKey, line: binding.requestLine?.bind(binding), deny: config.deny, skip: config.skip },
      composition,
      config.maxDelayMs,
    );
    const adaptive = config.adaptive;
    this.decide =
      adaptive === undefined
        ? this.evaluation.decide
        : withAdaptiveAdmission(this.evaluation.decide, adaptive, config.priority);
    if (adaptive !== undefined && config.observer !== undefined) adaptive.observe(config.observer);
    const headers = new HeaderWriter(
      config.headers,
      // A policy that changes with time (a calendar's `w`) or per key (an override's) is each decision's, as a per-request algorithm's is.
      config.limits.map((l, i) => ({
        name: l.headerName,
        policy:
          l.algorithm?.policyAt === undefined && !coreOf(this.limiters[i]!)!.overrides
            ? l.algorithm?.policy
            : undefined,
        shown: !l.dryRun,
      })),
    );
    this.response = Object.freeze({
      headers,
      problems: new ProblemBodies(),
      timers: config.timers,
      hasLeases: this.hasLeases,
      skipSuccessful: config.skipSuccessful,
      skipFailed: config.skipFailed,
      hold: (limit: number, state: Parameters<ResponsePolicy['hold']>[1], delayMs: number) =>
        cores[limit]!.hold(state, delayMs),
      actualCosts,
    });
  }

  /**
   * Runs the limits for one request. Resolves `undefined` when `skip` says so; otherwise a result
   * that is admitted (maybe with a delay to hold) or denied (429, or 503 when a fail-closed store
   * failed or the `adaptive` limit refused it). Rejects when the key or cost function throws or returns a bad value: then no limit
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
   * {@link evaluate} for adapters, without a promise when none is needed: with limiters on local
   * stores (`limiter.synchronous`, such as the memory store) and key, cost and skip functions that
   * return plain values, the result (or `undefined` when skipped) is returned directly, so the
   * adapter continues in the same tick; otherwise a promise of it. On the direct path a bad key or
   * cost (or a throwing function) throws instead of rejecting; either way no limit was charged.
   * (The evaluation's own function, so the per-request path has one call less.)
   */
  readonly decide: (req: Req) => MaybePromise<RateLimitResult | undefined>;

  /**
   * The operator's calls on a key in every limit of this middleware (see {@link KeyControls}): `resetKey` (each limit's reset has its
   * limiter's timeout: when one fails or times out, reported as `'storeError'`, it rejects with its `StoreError` or `StoreTimeoutError`
   * and never hangs), `blockKey` and `unblockKey` (bans: `bans: true`), `setOverride`, `getOverride` and `clearOverride` (`overrides: true`).
   */
  readonly controls: KeyControls = keyControls([this], '');

  /**
   * Listens to every limit's `'storeError'` ({@link StoreErrorEvent} with the limit's `name`) or
   * `'circuit'` event ({@link CircuitChange}, with `name`): an outage of any limit of this middleware.
   */
  on(event: 'storeError', listener: (event: StoreErrorEvent & { name: string }) => void): this;
  on(event: 'circuit', listener: (event: CircuitChange & { name: string }) => void): this;
  on(event: 'storeError' | 'circuit', listener: (event: never) => void): this {
    this.limiters.forEach((limiter, i) => {
      const name = this.limitNames[i]!;
      limiter.on(event, (payload: object) => (listener as (event: object) => void)({ ...payload, name }));
    });
    return this;
  }

  /** Gives back what every limit's quota leases hold, then closes the store this middleware created (a store passed in options is left open). */
  async close(): Promise<void> {
    await Promise.all(this.limiters.map((limiter) => limiter.close()));
    await this.defaultStore.close();
  }
}

/**
 * Where limit `i`'s limiter reports its option errors: the middleware (its options pass through to
 * every limit), or for several limits one with its own failure policy, that limit's entry.
 */
function limiterField<Req>(config: HttpConfig<Req>, i: number): string {
  return config.limits.length > 1 && config.limits[i]!.onStoreError !== undefined
    ? `${config.owner}.limits[${i}]`
    : config.owner;
}

/**
 * The options of one limit's limiter: the middleware's limiter options, the limit's own store and
 * policy, and its namespace (`<prefix>:<name>` when there are several limits).
 */
function limiterOptions<Req>(
  config: HttpConfig<Req>,
  limit: LimitConfig<Req>,
  prefix: string,
  store: Store,
): LimiterOptions {
  return {
    ...config.limiterOptions,
    algorithm: limit.algorithm,
    store,
    prefix: config.limits.length > 1 ? `${prefix}:${limit.name}` : prefix,
    timers: config.timers,
    // A constant cost is the largest this limit is charged: a fallback smaller than the limit's capacity can take it.
    maxCost: limit.maxCost,
    onStoreError: limit.onStoreError ?? config.limiterOptions.onStoreError,
    lease: limit.lease,
    // A concurrency limit takes no ban: the middleware's `bans` is for its rate limits.
    bans: limit.algorithm?.stateKind === 'leases' ? undefined : config.limiterOptions.bans,
    overrides: limit.algorithm?.stateKind === 'leases' ? undefined : config.limiterOptions.overrides,
    maxDebt: limit.maxDebt !== undefined ? limit.maxDebt : config.limiterOptions.maxDebt,
  } as LimiterOptions;
}

/** What an adapter's middleware function carries besides itself (see {@link withLimiter}): the limiter, the key controls, the outage events. */
export interface LimiterHandle<Req, Self> extends KeyControls {
  /** The http-layer limiter: its `limiters`, `prefix`, … */
  readonly limiter: HttpRateLimiter<Req>;
  /** Hears every limit's store failures (`'storeError'`) or circuit changes (`'circuit'`), with the limit's `name`. */
  on(event: 'storeError', listener: (event: StoreErrorEvent & { name: string }) => void): Self;
  on(event: 'circuit', listener: (event: CircuitChange & { name: string }) => void): Self;
}

/** Gives an adapter's middleware function `limiter`, the key controls and `on` (the same on every adapter that has a middleware object). */
export function withLimiter<Req, M extends object>(
  middleware: M,
  limiter: HttpRateLimiter<Req>,
): M & LimiterHandle<Req, M> {
  Object.defineProperty(middleware, 'limiter', { value: limiter });
  const handle = Object.assign(middleware, limiter.controls) as unknown as M & {
    on(event: 'storeError' | 'circuit', listener: (event: never) => void): M;
  };
  handle.on = (event, listener) => {
    limiter.on(event as 'storeError', listener as (event: StoreErrorEvent & { name: string }) => void);
    return middleware;
  };
  return handle as unknown as M & LimiterHandle<Req, M>;
}
