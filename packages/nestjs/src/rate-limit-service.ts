import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Reflector, type DiscoveryService, type HttpAdapterHost } from '@nestjs/core';
import type { CircuitChange, Store, StoreErrorEvent } from '@rl/core';
import { keyControls, type HttpRateLimiter, type KeyControls } from '@rl/core/http';
import { MemoryStore } from '@rl/store-memory';
import { RATE_LIMIT_OPTIONS, SKIP_RATE_LIMIT } from './decorators.js';
import { NestLimit } from './nest-limit.js';
import { STATE_OPTIONS, type RateLimitDecoratorOptions, type RateLimitModuleOptions, type RateLimitOptions } from './options.js';
import type { NestRequest } from './platform.js';

/** Names the module's options in errors (`RateLimitModule.forRoot.windowMs`). */
export const MODULE_OWNER = 'RateLimitModule.forRoot';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
type Handler = Function;
type Controller = abstract new (...args: never[]) => unknown;
type Listener = (event: StoreErrorEvent & { name: string }) => void;

/** A prepared limit and the options it was built from (what a handler's `@RateLimit` is merged over). */
interface Prepared {
  readonly options: RateLimitOptions;
  readonly limit: NestLimit;
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
 * quota leases hold and closes the store it created (a store given in the options is left open).
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

  private readonly root: Prepared;
  /** The memory store made for the module when its options give none: one for every limit, closed at shutdown. */
  private readonly ownedStore: Store | undefined;
  private readonly limiters = new Set<HttpRateLimiter<NestRequest>>();
  private readonly limits: NestLimit[] = [];
  private readonly listeners: ['storeError' | 'circuit', Listener][] = [];
  private readonly reflector = new Reflector();
  /** Each controller's limit when it has `@RateLimit` (null: it has none). */
  private readonly controllers = new WeakMap<Controller, Prepared | null>();
  /** The limit of each handler of each controller (null: skipped), resolved once. */
  private readonly handlers = new WeakMap<Controller, Map<Handler, NestLimit | null>>();

  /**
   * `options`: the module's, checked here (an `InvalidOptionError` naming `<owner>.<field>`);
   * `discovery`: finds the controllers whose `@RateLimit` limits are built at start; `adapterHost`:
   * the app's platform (on Fastify, `request.rateLimit` is declared at start).
   */
  constructor(
    options: RateLimitModuleOptions,
    private readonly discovery?: DiscoveryService,
    owner: string = MODULE_OWNER,
    private readonly adapterHost?: HttpAdapterHost,
  ) {
    const { global: _global, ...limitOptions } = options;
    this.ownedStore = limitOptions.store === undefined ? new MemoryStore() : undefined;
    const shared: RateLimitOptions = this.ownedStore === undefined ? limitOptions : { ...limitOptions, store: this.ownedStore };
    try {
      this.root = { options: shared, limit: this.add(new NestLimit(shared, owner)) };
    } catch (error) {
      void this.ownedStore?.close?.();
      throw error;
    }
    this.limiter = this.root.limit.limiter;
    const controls = keyControls(this.limiters, 'RateLimitService.');
    ({ resetKey: this.resetKey, blockKey: this.blockKey, unblockKey: this.unblockKey, setOverride: this.setOverride, getOverride: this.getOverride, clearOverride: this.clearOverride } = controls);
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
   * handler; an `InvalidOptionError` names `<Controller>.<handler> @RateLimit.<field>`.
   */
  limitFor(controller: Controller, handler: Handler): NestLimit | null {
    let known = this.handlers.get(controller);
    if (known === undefined) this.handlers.set(controller, (known = new Map()));
    let limit = known.get(handler);
    if (limit === undefined) {
      limit = this.resolve(controller, handler);
      known.set(handler, limit);
    }
    return limit;
  }

  /**
   * Builds the limits of every controller and handler with `@RateLimit`, so that bad options stop the
   * app from starting. On Fastify, declares `request.rateLimit` (null until a guard sets it), as
   * Fastify asks of a request property: every request then has the same shape.
   */
  onModuleInit(): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter?.getType() === 'fastify') {
      const fastify = adapter.getInstance<{ hasRequestDecorator(name: string): boolean; decorateRequest(name: string, value: null): void }>();
      if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
    }
    for (const wrapper of this.discovery?.getControllers() ?? []) {
      const controller = wrapper.metatype as Controller | null | undefined;
      if (typeof controller !== 'function') continue;
      for (const handler of routeHandlers(controller)) this.limitFor(controller, handler);
    }
  }

  /** Gives back what the quota leases of every limit hold, then closes the store the module created. */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.limits.map((limit) => limit.close()));
    await this.ownedStore?.close?.();
  }

  private resolve(controller: Controller, handler: Handler): NestLimit | null {
    const skip = this.reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT, [handler, controller]);
    if (skip === true) return null;
    const base = this.controllerLimit(controller) ?? this.root;
    const own = this.reflector.get<RateLimitDecoratorOptions | undefined>(RATE_LIMIT_OPTIONS, handler);
    if (own === undefined) return base.limit;
    return this.prepare(base, own, `${controller.name}.${handler.name} @RateLimit`, `${controller.name}.${handler.name}`).limit;
  }

  private controllerLimit(controller: Controller): Prepared | null {
    let prepared = this.controllers.get(controller);
    if (prepared === undefined) {
      const own = this.reflector.get<RateLimitDecoratorOptions | undefined>(RATE_LIMIT_OPTIONS, controller);
      prepared = own === undefined ? null : this.prepare(this.root, own, `${controller.name} @RateLimit`, controller.name);
      this.controllers.set(controller, prepared);
    }
    return prepared;
  }

  /**
   * `over` merged over `base`, as @rl/fastify merges a route's options over the plugin's: `limits`
   * replaces `algorithm` and the reverse; without a state option (`algorithm`, `limits`, `prefix`,
   * `store`) the limit spends `base`'s (its namespace); with one it has its own state, in `<base
   * prefix>:<route>` when `base` has an explicit prefix (apps sharing a Redis keep apart), else a
   * default namespace.
   */
  private prepare(base: Prepared, over: RateLimitDecoratorOptions, owner: string, route: string): Prepared {
    const merged: Record<string, unknown> = { ...base.options, ...over };
    if (over.limits !== undefined) delete merged.algorithm;
    if (over.algorithm !== undefined) delete merged.limits;
    const ownState = STATE_OPTIONS.some((name) => over[name] !== undefined);
    if (!ownState) merged.prefix = base.limit.limiter.prefix;
    else if (over.prefix === undefined && base.options.prefix !== undefined) merged.prefix = `${base.options.prefix}:${route}`;
    else if (over.prefix === undefined) delete merged.prefix;
    const options = merged as RateLimitOptions;
    return { options, limit: this.add(new NestLimit(options, owner)) };
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
  for (let proto = controller.prototype as object | null; proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
      if (typeof value === 'function') handlers.push(value);
    }
  }
  return handlers;
}
