import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { RouteLimit } from './route-limit.js';

/** The limit of a route from its `config.rateLimit` (see `limitOf` in the plugin): `owner` names it in errors, `route` in a namespace of its own. */
export type LimitOf = (config: unknown, owner: string, route: string) => RouteLimit | null;

/**
 * Adds `hook` after the route's own hooks of `name` (as @fastify/rate-limit does): an authentication
 * hook of the route (`{ onRequest: [app.authenticate] }`, @fastify/jwt's way) runs first, so a key
 * may read `request.user`, and a request its own hooks refuse is not charged. It goes before the
 * route's own rl hooks (`isLimitHook`: `fastify.rateLimit()`), as an outer limit before an inner one.
 * The app's and the context's hooks (`addHook`) run before any route hook, as Fastify orders them.
 */
export function addHook(
  route: RouteOptions,
  name: 'onRequest' | 'preHandler',
  hook: unknown,
  isLimitHook: (hook: unknown) => boolean,
): void {
  const existing = route[name] as unknown;
  const list = existing === undefined || existing === null ? [] : Array.isArray(existing) ? existing : [existing];
  const at = list.findIndex(isLimitHook);
  (route as unknown as Record<string, unknown>)[name] =
    at === -1 ? [...list, hook] : [...list.slice(0, at), hook, ...list.slice(at)];
}

/**
 * A route's name in its own namespace (`<plugin prefix>:<name>`) and in errors: its method and url,
 * and its constraints when it has any (two routes of one url told apart by `version` or `host` are
 * two routes). A HEAD route is named as the GET it mirrors: Fastify adds one for each GET, with the
 * GET's options, and it spends the GET's limit.
 */
export function routeName(method: unknown, url: unknown, constraints?: Record<string, unknown>): string {
  const verb = Array.isArray(method) ? method.join(',') : String(method);
  const given = constraints === undefined ? [] : Object.entries(constraints).filter(([, v]) => v !== undefined);
  const told = given.length === 0 ? '' : ` (${given.map(([k, v]) => `${k}=${String(v)}`).join(', ')})`;
  return `${verb === 'HEAD' ? 'GET' : verb} ${String(url)}${told}`;
}

/**
 * Whether the instance's router has routes yet. find-my-way prints `(empty tree)` for a router
 * without routes; any other text (a future format too) counts as routes: the side that limits them.
 */
export function routesDeclared(fastify: FastifyInstance): boolean {
  return fastify.printRoutes() !== '(empty tree)';
}

/**
 * Limits the routes of the context that were declared before the plugin loaded (their config lacks
 * `seen`, the mark onRoute gives), with instance hooks: the route's limit runs in the hook it asks
 * for, before the route's own hooks (Fastify runs a context's hooks first). Their handlers are not
 * wrapped (see `limitedHandler`): a permit whose client left while the handler ran comes back when
 * the handler sends its reply, or at its lease.
 */
export function limitRoutesDeclaredBefore(fastify: FastifyInstance, seen: symbol, limitOf: LimitOf): void {
  const pending = Symbol('rl.pending');
  fastify.decorateRequest(pending, null);
  const unseenLimit = (request: FastifyRequest): RouteLimit | null => {
    const config = request.routeOptions.config as Record<string | symbol, unknown> & {
      url?: string;
      method?: string;
      rateLimit?: unknown;
    };
    if (config[seen] === true || config.url === undefined) return null;
    const version = (request.routeOptions as { version?: string }).version;
    const route = routeName(config.method, config.url, version === undefined ? undefined : { version });
    return limitOf(config.rateLimit, `${route} config.rateLimit`, route);
  };
  fastify.addHook('onRequest', function rateLimitRouteDeclaredBefore(request, reply, done) {
    let limit: RouteLimit | null;
    try {
      limit = unseenLimit(request);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (limit === null) return done();
    if (limit.hook === 'onRequest') return limit.handler(request, reply, done);
    (request as unknown as Record<symbol, RouteLimit | null>)[pending] = limit;
    done();
  });
  fastify.addHook('preHandler', function rateLimitRouteDeclaredBeforeInPreHandler(request, reply, done) {
    const limit = (request as unknown as Record<symbol, RouteLimit | null>)[pending];
    if (limit === null || limit === undefined) return done();
    limit.handler(request, reply, done);
  });
}
