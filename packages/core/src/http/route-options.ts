/**
 * The options that, when a route sets any of them, give the route a limit with state of its own
 * instead of spending its parent's: the limits themselves (`algorithm`, `limits`), where their state
 * lives (`store`) and under which namespace (`prefix`).
 */
export const STATE_OPTIONS = ['algorithm', 'limits', 'prefix', 'store'] as const;

/** The part of a route's options the merge reads (`HttpRateLimitOptions` and every adapter's own have these). */
export interface RouteStateOptions {
  algorithm?: unknown;
  limits?: unknown;
  prefix?: string | undefined;
  store?: unknown;
}

/** Where a route's options are merged: its parent's limit, and the route's name. */
export interface RouteSetting {
  /**
   * The namespace of the parent's limit (`limiter.prefix`), when the parent has a limit that runs: a
   * route without state options then spends it. Undefined when it has none (Fastify's
   * `global: false`): such a route is a limit of the parent's options with a namespace of its own.
   */
  readonly parentPrefix: string | undefined;
  /**
   * Names the route in a namespace of its own (`GET /export`, `ExportController.exportAll`): a route
   * with state options but no `prefix`, under a parent with an explicit `prefix`, keeps its state
   * under `<parent prefix>:<route>`.
   */
  readonly route: string;
}

/**
 * The options of a route's limit: `over` (a route's, a controller's, a handler's) merged over `base`
 * (its parent's options), the one rule of every adapter with limits per route (Fastify's
 * `config.rateLimit`, Nest's `@RateLimit`):
 *
 * - `over`'s options replace `base`'s, one by one (an option `over` sets to `undefined` is unset);
 *   `limits` replaces `algorithm` and the reverse (a route gives one or the other).
 * - Without a state option ({@link STATE_OPTIONS}) the route spends its parent's limit: its
 *   namespace is `setting.parentPrefix`, so a route that changes only the cost, the key, the headers,
 *   … charges the same state (`cost: 5` costs 5 of the parent's budget).
 * - With one, the route has state of its own: its `prefix`, else `<base prefix>:<route>` when `base`
 *   has an explicit `prefix` (apps sharing a Redis keep apart, and the route's counts stay apart from
 *   its parent's), else none (a default namespace, taken when its limit is built).
 *
 * `base` and `over` are left as they are; the result is a new object.
 */
export function mergeRouteOptions<O extends RouteStateOptions>(base: O, over: Partial<O>, setting: RouteSetting): O {
  const merged: RouteStateOptions = { ...base, ...over };
  if (over.limits !== undefined) delete merged.algorithm;
  if (over.algorithm !== undefined) delete merged.limits;
  if (!hasOwnState(over)) {
    if (setting.parentPrefix !== undefined) merged.prefix = setting.parentPrefix;
  } else if (over.prefix === undefined) {
    if (base.prefix !== undefined) merged.prefix = `${base.prefix}:${setting.route}`;
    else delete merged.prefix;
  }
  return merged as O;
}

/** True when `options` set a state option: a limit of their own. */
export function hasOwnState(options: RouteStateOptions): boolean {
  return STATE_OPTIONS.some((name) => options[name] !== undefined);
}
