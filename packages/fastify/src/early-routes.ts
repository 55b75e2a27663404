import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { RouteLimit } from './route-limit.js';

/** The limit of a route from its `config.rateLimit` (see `limitOf` in the plugin): `owner` names it in errors, `route` in a namespace of its own. */
export type LimitOf = (config: unknown, owner: string, route: string) => RouteLimit | null;

/** Adds `hook` before the route's hooks of `name`. */
export function addHook(route: RouteOptions, name: 'onRequest' | 'preHandler', hook: unknown): void {
  const existing = route[name] as unknown;
  const list = existing === undefined || existing === null ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<string, unknown>)[name] = [hook, ...list];
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
 * for. Their handlers are not wrapped (see `limitedHandler`): a permit whose client left while the
 * handler ran comes back when the handler sends its reply, or at its lease.
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
    const route = `${String(config.method)} ${config.url}`;
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
