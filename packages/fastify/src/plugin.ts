import type { FastifyInstance } from 'fastify';
import { MemoryStore } from '@rl/store-memory';
import { InvalidOptionError } from '@rl/core';
import {
  checkOptionNames,
  DefaultStore,
  keyControls,
  mergeRouteOptions,
  type KeyControls,
  type OutageLogger,
} from '@rl/core/http';
import { ADAPTER_OPTIONS } from './binding.js';
import { addHook, limitRoutesDeclaredBefore, routeName, routesDeclared } from './early-routes.js';
import type { RateLimitHook, RateLimitPluginOptions, RouteRateLimitOptions } from './options.js';
import {
  limitedHandler,
  parseHook,
  prepare as prepareLimit,
  type Hook,
  type LimitSetting,
  type RouteLimit,
} from './route-limit.js';

/** Where the decorator keeps the app's limits, and their hooks. */
const LIMITS: unique symbol = Symbol('rl.limits');
const HOOKS: unique symbol = Symbol('rl.hooks');

/** `fastify.rateLimit`: the hook factory, with the key controls (`resetKey`, …) and the limits they reach. */
interface Registry extends KeyControls {
  (routeOptions?: RouteRateLimitOptions): RateLimitHook;
  readonly [LIMITS]: Set<RouteLimit['limiter']>;
  /** The hooks of the app's limits: a route's own rl hooks (`fastify.rateLimit()`), which the plugin's hook goes before. */
  readonly [HOOKS]: WeakSet<object>;
}

/** The plugin: validates its options, then limits the routes of the instance it is registered on. */
export async function rateLimitPlugin(fastify: FastifyInstance, options: RateLimitPluginOptions): Promise<void> {
  checkOptionNames(options, 'rateLimit', [...ADAPTER_OPTIONS, 'global']);
  const { global = true, ...shared } = options;
  if (typeof global !== 'boolean')
    throw new InvalidOptionError(
      'rateLimit.global',
      global,
      'true (every route) or false (only routes with config.rateLimit)',
    );
  const pluginHook = parseHook(shared.hook, 'rateLimit');
  // One memory store for every limit of this registration when the options give none, closed with the instance.
  const defaultStore = new DefaultStore(() => new MemoryStore());
  const createStore = () => defaultStore.storeFor(undefined);
  // `undefined` alone means "not given": a null store is rejected here, also when no route is limited yet (global: false).
  if (shared.store === null)
    throw new InvalidOptionError(
      'rateLimit.store',
      null,
      'a store such as new MemoryStore() (leave the option out for the default)',
    );
  const base: RouteRateLimitOptions = { ...shared, store: defaultStore.storeFor(shared.store) };
  // Store outages are logged once per outage on the instance's logger (see OutageLog).
  const logger: OutageLogger = {
    warn: (details, message) => fastify.log.warn(details, message),
    info: (details, message) => fastify.log.info(details, message),
  };
  const setting = (owner: string, hook: Hook): LimitSetting => ({ owner, hook, createStore, logger });
  // Every limit prepared in this app, for `fastify.rateLimit.resetKey` (one set, shared with the registrations of the app's other contexts).
  const registry = fastify.hasDecorator('rateLimit') ? (fastify.rateLimit as Partial<Registry>) : undefined;
  const limits: Set<RouteLimit['limiter']> = registry?.[LIMITS] ?? new Set();
  const hooks: WeakSet<object> = registry?.[HOOKS] ?? new WeakSet();
  const prepare = (options: RouteRateLimitOptions, at: LimitSetting): RouteLimit => {
    const limit = prepareLimit(options, at);
    limits.add(limit.limiter);
    hooks.add(limit.handler);
    return limit;
  };
  const globalLimit = global ? prepare(base, setting('rateLimit', pluginHook)) : undefined;

  /**
   * The limit of a route from its `config.rateLimit` (`undefined`: the plugin's; `false`: none), or
   * null. Throws an InvalidOptionError naming `owner` for bad route options. One limit per route
   * options object and route (see `routeName`): the HEAD route Fastify adds for a GET shares the GET's
   * limit, a route the plugin never saw (see `limitRoutesDeclaredBefore`) or `fastify.rateLimit(options)`
   * the limit of the same options; one options object given to two routes (a "strict" limit) makes a
   * limit for each, as each route's namespace says.
   */
  const routeLimits = new WeakMap<object, Map<string, RouteLimit>>();
  function limitOf(config: unknown, owner: string, route: string): RouteLimit | null {
    if (config === false || (config === undefined && globalLimit === undefined)) return null;
    if (config === undefined) return globalLimit!;
    if (config === null || typeof config !== 'object')
      throw new InvalidOptionError(owner, config, 'route options merged over the plugin options, or false');
    let byRoute = routeLimits.get(config);
    if (byRoute === undefined) routeLimits.set(config, (byRoute = new Map()));
    const known = byRoute.get(route);
    if (known !== undefined) return known;
    const own = config as RouteRateLimitOptions;
    // A route that only changes the cost, key, headers, ... spends the plugin's limit; one with state
    // options has state of its own, under `<plugin prefix>:<METHOD url>` when the plugin has a prefix.
    const merged = mergeRouteOptions(base, own, { parentPrefix: globalLimit?.limiter.prefix, route });
    const hook = own.hook === undefined ? pluginHook : parseHook(own.hook, owner);
    const limit = prepare(merged, setting(owner, hook));
    byRoute.set(route, limit);
    return limit;
  }

  // Registered again in a child context (a stricter limit for some routes), the decorator exists already.
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
  // Routes declared once the plugin has loaded: their hook is added here, and the route is marked as
  // seen. Under a concurrency limit, the route handler tells the limit when its work is over (see
  // `limitedHandler`): a client that leaves while it runs frees its permit then, not sooner.
  const seen = Symbol('rl.seen');
  fastify.addHook('onRoute', (route) => {
    route.config = { ...route.config, [seen]: true } as typeof route.config;
    const name = routeName(route.method, route.url, route.constraints as Record<string, unknown> | undefined);
    const limit = limitOf(route.config?.rateLimit, `${name} config.rateLimit`, name);
    if (limit === null) return;
    addHook(route, limit.hook, limit.handler, (hook) => hooks.has(hook as object));
    if (limit.workDone !== undefined)
      route.handler = limitedHandler(
        route.handler as Parameters<typeof limitedHandler>[0],
        limit.workDone,
      ) as typeof route.handler;
  });

  // Routes declared before the plugin loaded (`app.register(rateLimit, …)` without `await`, then
  // `app.get(…)`; or routes declared before the register call) never reached onRoute. Instance hooks
  // apply to every route of the context whenever it was declared: they limit those routes, with the
  // limit prepared at their first request (bad route options then answer 500 through the error
  // handler). Requests that end in 404 are left alone: see `fastify.rateLimit()`. Without such
  // routes the hooks are not installed: each request would pay two hook calls and a
  // `request.routeOptions` read for nothing.
  if (routesDeclared(fastify)) limitRoutesDeclaredBefore(fastify, seen, limitOf);

  // With global: false, `fastify.rateLimit()` is the plugin's options alone, one limit however often it is called.
  const pluginOptionsOnly: RouteRateLimitOptions = {};
  // `fastify.rateLimit(options?)`: the plugin's limit (or route options merged over the plugin's) as a
  // hook, for the not-found handler or a route of `global: false`. The first registration decorates.
  if (!fastify.hasDecorator('rateLimit')) {
    const rateLimitHook = function rateLimitHook(routeOptions?: RouteRateLimitOptions): RateLimitHook {
      const limit =
        routeOptions === undefined && globalLimit === undefined
          ? limitOf(pluginOptionsOnly, 'fastify.rateLimit()', 'rateLimit()')
          : limitOf(routeOptions, 'fastify.rateLimit(options)', 'rateLimit(options)');
      if (limit === null)
        throw new InvalidOptionError(
          'fastify.rateLimit(options)',
          routeOptions,
          'route options merged over the plugin options',
        );
      return limit.handler;
    };
    const decorator: Registry = Object.assign(rateLimitHook, {
      [LIMITS]: limits,
      [HOOKS]: hooks,
      // resetKey, blockKey, unblockKey, setOverride, getOverride, clearOverride: in every limit of every route of the plugin.
      ...keyControls(limits, 'fastify.rateLimit.'),
    });
    fastify.decorate('rateLimit', decorator);
  }
  fastify.addHook('onClose', async () => {
    // Quota leases give back what they hold before the store closes.
    await Promise.all([...limits].map((limiter) => limiter.close()));
    await defaultStore.close();
  });
}
