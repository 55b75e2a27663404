import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Reflector, type DiscoveryService, type HttpAdapterHost } from '@nestjs/core';
import { InvalidOptionError, type CircuitChange, type StoreErrorEvent } from '@rl/core';
import {
  DefaultKey,
  DefaultStore,
  keyControls,
  mergeRouteOptions,
  parseIPv6Subnet,
  type HttpRateLimiter,
  type KeyControls,
  type KeyFunction,
} from '@rl/core/http';
import { MemoryStore } from '@rl/store-memory';
import { RATE_LIMIT_OPTIONS, SKIP_RATE_LIMIT } from './decorators.js';
import { NestLimit } from './nest-limit.js';
import { warnUnlimitedContext } from './unlimited-context.js';
import type { OnLimitHandler, RateLimitDecoratorOptions, RateLimitModuleOptions, RateLimitOptions } from './options.js';
import { nestBinding, type NestRequest } from './platform.js';

/** Names the module's options in errors (`RateLimitModule.forRoot.windowMs`). */
export const MODULE_OWNER = 'RateLimitModule.forRoot';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
type Handler = Function;
type Controller = abstract new (...args: never[]) => unknown;
type Listener = (event: StoreErrorEvent & { name: string }) => void;

/** A prepared limit, the options it was built from (what a handler's `@RateLimit` is merged over) and the name its errors give. */
interface Prepared {
  readonly options: RateLimitOptions;
  readonly limit: NestLimit;
  readonly owner: string;
}

/** What the module gives its service besides the options; all optional for a service made by hand (`new RateLimitService(options)`). */
export interface RateLimitServiceSetting {
  /** Finds the controllers whose `@RateLimit` limits are built when the app starts (without it: at their first request). */
  readonly discovery?: DiscoveryService;
  /** The app's platform (on Fastify, `request.rateLimit` is declared at start). */
  readonly adapterHost?: HttpAdapterHost;
  /** Names the module's options in errors (`<owner>.<field>`). Default `RateLimitModule.forRoot`. */
  readonly owner?: string;
  /**
   * The owner of the default store (the module's, whose store provider may have made it): the service
   * closes it at shutdown, after its limits. Default: one of its own, which makes a memory store when
   * the options give none.
   */
  readonly defaultStore?: DefaultStore;
}

/**
 * What a guard gives the limits it runs where their options give none (see `RateLimitGuard`): the
 * key (its `getTracker`) and the denial (its `onLimit`). One object per guard class (see
 * {@link RateLimitService.guardDefaults}): the service builds each route's limit with it once.
 */
export interface GuardDefaults {
  readonly key?: KeyFunction<NestRequest> | undefined;
  readonly onLimit?: OnLimitHandler | undefined;
}

/**
 * The module's limits and their handle: inject it (`constructor(private readonly rateLimit:
 * RateLimitService)`) for the key controls of every limit of the module, the module's limit and all
 * the `@RateLimit` ones (`resetKey(key)` after a successful login, `blockKey`, `unblockKey` with
 * `bans: true`, `setOverride`, `getOverride`, `clearOverride` with `overrides: true`; see
 * `KeyControls`), `limiter` (the module's limit: its `limiters`, `prefix`) and `on('storeError' |
 * 'circuit', listener)`.
 *
 * One per app: it builds the module's limit, and when the app starts (`onModuleInit`) the limit of
 * every controller and handler with `@RateLimit`, each once; at shutdown it gives back what their
 * quota leases hold and closes the default store (a store given in the options, or by a provider of
 * `getStorageToken()`, is left open).
 */
export class RateLimitService implements KeyControls, OnModuleInit, OnApplicationShutdown {
  /** The module's limit (the shared HTTP layer's limiter: `limiters`, `prefix`, …). */
  readonly limiter: HttpRateLimiter<NestRequest>;
  readonly resetKey: KeyControls['resetKey'];
  readonly blockKey: KeyControls['blockKey'];
  readonly unblockKey: KeyControls['unblockKey'];
  readonly setOverride: KeyControls['setOverride'];
  readonly getOverride: KeyControls['getOverride'];
  readonly clearOverride: KeyControls['clearOverride'];
  /**
   * The client's key as the module's default key makes it: the client IP under the platform's
   * trust-proxy setting, IPv6 grouped by the module's `ipv6Subnet` (what `RateLimitGuard.getTracker`
   * answers unless overridden). Throws `InvalidKeyError` when the platform reports no client IP.
   */
  readonly clientKey: (req: NestRequest) => string;

  private readonly root: Prepared;
  /** The memory store made for the module when nothing gives one: one for every limit, closed at shutdown. */
  private readonly defaultStore: DefaultStore;
  private readonly discovery: DiscoveryService | undefined;
  private readonly adapterHost: HttpAdapterHost | undefined;
  private readonly limiters = new Set<HttpRateLimiter<NestRequest>>();
  private readonly limits: NestLimit[] = [];
  private readonly listeners: ['storeError' | 'circuit', Listener][] = [];
  private readonly reflector = new Reflector();
  /** Each controller's limit when it has `@RateLimit` (null: it has none). */
  private readonly controllers = new WeakMap<Controller, Prepared | null>();
  /** The limit of each handler of each controller (null: skipped), resolved once. */
  private readonly handlers = new WeakMap<Controller, Map<Handler, Prepared | null>>();
  /** Per guard's defaults, each route limit with them (see {@link GuardDefaults}). */
  private readonly guarded = new WeakMap<GuardDefaults, WeakMap<Prepared, NestLimit>>();
  /** The defaults of each guard class (see {@link guardDefaults}). */
  private readonly guardClasses = new WeakMap<object, GuardDefaults>();
  /** The kinds of context (`graphql`, `ws`, `rpc`) a guard let through unlimited, told once each (see {@link passedUnlimited}). */
  private readonly unlimitedContexts = new Set<string>();
  /** The controller each namespace made of a route's name (`<prefix>:<Controller.handler>`) belongs to (see {@link prepare}). */
  private readonly routeNamespaces = new Map<string, Controller>();

  /** `options`: the module's, checked here (an `InvalidOptionError` naming `<owner>.<field>`). */
  constructor(options: RateLimitModuleOptions, setting: RateLimitServiceSetting = {}) {
    const owner = setting.owner ?? MODULE_OWNER;
    this.discovery = setting.discovery;
    this.adapterHost = setting.adapterHost;
    this.defaultStore = setting.defaultStore ?? new DefaultStore(() => new MemoryStore());
    const { global: _global, ...limitOptions } = options;
    try {
      const shared: RateLimitOptions = { ...limitOptions, store: this.defaultStore.storeFor(limitOptions.store) };
      this.root = { options: shared, owner, limit: this.add(new NestLimit(shared, owner)) };
    } catch (error) {
      void this.defaultStore.close();
      throw error;
    }
    this.limiter = this.root.limit.limiter;
    this.clientKey = new DefaultKey(
      nestBinding(owner),
      parseIPv6Subnet(limitOptions.ipv6Subnet, `${owner}.ipv6Subnet`),
    ).of;
    const controls = keyControls(this.limiters, 'RateLimitService.');
    ({
      resetKey: this.resetKey,
      blockKey: this.blockKey,
      unblockKey: this.unblockKey,
      setOverride: this.setOverride,
      getOverride: this.getOverride,
      clearOverride: this.clearOverride,
    } = controls);
  }

  /** Hears every limit's store failures (`'storeError'`) or circuit changes (`'circuit'`), with the limit's `name`; limits built later too. */
  on(event: 'storeError', listener: (event: StoreErrorEvent & { name: string }) => void): this;
  on(event: 'circuit', listener: (event: CircuitChange & { name: string }) => void): this;
  on(event: 'storeError' | 'circuit', listener: (event: never) => void): this {
    const heard = listener as Listener;
    this.listeners.push([event, heard]);
    for (const limiter of this.limiters) limiter.on(event as 'storeError', heard);
    return this;
  }

  /**
   * The limit of a route (the controller class and its handler), or null when `@SkipRateLimit()`
   * says so: the handler's `@RateLimit` over its controller's over the module's. Built once per
   * handler; an `InvalidOptionError` names `<Controller>.<handler> @RateLimit.<field>`. With a guard's
   * `defaults`, the same limit (its state, its store) with the guard's key and denial where its
   * options give none, built at the route's first request through that guard.
   */
  limitFor(controller: Controller, handler: Handler, defaults?: GuardDefaults): NestLimit | null {
    let known = this.handlers.get(controller);
    if (known === undefined) this.handlers.set(controller, (known = new Map()));
    let prepared = known.get(handler);
    if (prepared === undefined) {
      prepared = this.resolve(controller, handler);
      known.set(handler, prepared);
    }
    if (prepared === null) return null;
    return defaults === undefined ? prepared.limit : this.withDefaults(prepared, defaults);
  }

  /**
   * The defaults of guard class `guardClass`, made by `make` at its first instance: one object per
   * class, so that a request-scoped guard (an instance per request) runs the limits built for its
   * class, not a new one per request.
   */
  guardDefaults(guardClass: object, make: () => GuardDefaults): GuardDefaults {
    let defaults = this.guardClasses.get(guardClass);
    if (defaults === undefined) this.guardClasses.set(guardClass, (defaults = make()));
    return defaults;
  }

  /** A guard let a context of `type` (not `http`) through unlimited: told once per type and module (see {@link warnUnlimitedContext}). */
  passedUnlimited(type: string): void {
    warnUnlimitedContext(type, this.unlimitedContexts);
  }

  /**
   * Builds the limits of every controller and handler with `@RateLimit`, so that bad options stop the
   * app from starting. On Fastify, declares `request.rateLimit` (null until a guard sets it), as
   * Fastify asks of a request property: every request then has the same shape.
   */
  onModuleInit(): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter?.getType() === 'fastify') {
      const fastify = adapter.getInstance<{
        hasRequestDecorator(name: string): boolean;
        decorateRequest(name: string, value: null): void;
      }>();
      if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
    }
    for (const wrapper of this.discovery?.getControllers() ?? []) {
      const controller = wrapper.metatype as Controller | null | undefined;
      if (typeof controller !== 'function') continue;
      for (const handler of routeHandlers(controller)) this.limitFor(controller, handler);
    }
  }

  /** Gives back what the quota leases of every limit hold, then closes the default store (when it was made). */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.limits.map((limit) => limit.close()));
    await this.defaultStore.close();
  }

  private resolve(controller: Controller, handler: Handler): Prepared | null {
    const skip = this.reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT, [handler, controller]);
    if (skip === true) return null;
    const base = this.controllerLimit(controller) ?? this.root;
    const own = this.reflector.get<RateLimitDecoratorOptions | undefined>(RATE_LIMIT_OPTIONS, handler);
    if (own === undefined) return base;
    return this.prepare(base, own, `${controller.name}.${handler.name} @RateLimit`, {
      name: `${controller.name}.${handler.name}`,
      controller,
    });
  }

  private controllerLimit(controller: Controller): Prepared | null {
    let prepared = this.controllers.get(controller);
    if (prepared === undefined) {
      const own = this.reflector.get<RateLimitDecoratorOptions | undefined>(RATE_LIMIT_OPTIONS, controller);
      prepared =
        own === undefined
          ? null
          : this.prepare(this.root, own, `${controller.name} @RateLimit`, { name: controller.name, controller });
      this.controllers.set(controller, prepared);
    }
    return prepared;
  }

  /**
   * `over` merged over `base` by the rule of every adapter's route options (`mergeRouteOptions` of
   * @rl/core/http): without a state option (`algorithm`, `limits`, `prefix`, `store`) the limit spends
   * `base`'s; with one it has its own state, in `<base prefix>:<route>` when `base` has an explicit
   * prefix, else a default namespace.
   */
  private prepare(
    base: Prepared,
    over: RateLimitDecoratorOptions,
    owner: string,
    route: { readonly name: string; readonly controller: Controller | undefined },
  ): Prepared {
    const parentPrefix = base.limit.limiter.prefix;
    const options = mergeRouteOptions(base.options, over, { parentPrefix, route: route.name });
    // A namespace made of the route's name belongs to its controller: two controllers of one name (a
    // v1 and a v2 `UsersController`) would count into one state unseen.
    if (route.controller !== undefined && options.prefix === `${base.options.prefix}:${route.name}`) {
      const holder = this.routeNamespaces.get(options.prefix);
      if (holder !== undefined && holder !== route.controller)
        throw new InvalidOptionError(
          `${owner}.prefix`,
          undefined,
          `a prefix of its own: two controllers named ${route.controller.name} would share the namespace ${options.prefix} (rename one, or give its @RateLimit a prefix)`,
        );
      this.routeNamespaces.set(options.prefix, route.controller);
    }
    return { options, owner, limit: this.add(new NestLimit(options, owner)) };
  }

  /**
   * `prepared`'s limit with a guard's defaults where its options give none: the same limit when they
   * change nothing, else, built once, a limit of the same state (a key and a denial are no state
   * options: it spends `prepared`'s namespace and store).
   */
  private withDefaults(prepared: Prepared, defaults: GuardDefaults): NestLimit {
    let limits = this.guarded.get(defaults);
    if (limits === undefined) this.guarded.set(defaults, (limits = new WeakMap()));
    let limit = limits.get(prepared);
    if (limit === undefined) {
      const over: RateLimitDecoratorOptions = {};
      if (prepared.options.key === undefined && defaults.key !== undefined) over.key = defaults.key;
      if (prepared.options.onLimit === undefined && defaults.onLimit !== undefined) over.onLimit = defaults.onLimit;
      const changed = over.key !== undefined || over.onLimit !== undefined;
      limit = changed
        ? this.prepare(prepared, over, prepared.owner, { name: prepared.owner, controller: undefined }).limit
        : prepared.limit;
      limits.set(prepared, limit);
    }
    return limit;
  }

  private add(limit: NestLimit): NestLimit {
    this.limits.push(limit);
    this.limiters.add(limit.limiter);
    for (const [event, listener] of this.listeners) limit.limiter.on(event as 'storeError', listener);
    return limit;
  }
}

/** The methods of a controller class and its parents (its route handlers among them). */
function routeHandlers(controller: Controller): Handler[] {
  const handlers: Handler[] = [];
  const seen = new Set<string>();
  for (
    let proto = controller.prototype as object | null;
    proto !== null && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
      if (typeof value === 'function') handlers.push(value);
    }
  }
  return handlers;
}
