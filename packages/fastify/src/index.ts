// `@rl/fastify`: the plugin's types and Fastify's module augmentation, and the plugin (plugin.ts), whose
// limits (route-limit.ts) answer through Fastify's side of the shared decision tree (fastify-io.ts).
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { idempotencyKeyFrom, type KeyControls } from '@rl/core/http';
import type { RateLimitResult } from '@rl/core';
import type { RateLimitHook, RouteRateLimitOptions } from './options.js';
import { rateLimitPlugin } from './plugin.js';

export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';
export type { OnLimitHandler, RouteRateLimitOptions, RateLimitPluginOptions, RateLimitHook } from './options.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The outcome of the rate limit for this request; null when the route is not limited or the request was skipped. */
    rateLimit: RateLimitResult | null;
  }
  interface FastifyInstance {
    /**
     * The plugin's limit as a hook, for what the plugin does not limit by itself: requests that end in
     * 404 (`app.setNotFoundHandler({ preHandler: app.rateLimit() }, handler)`: scanners probing
     * unknown paths), or a route of `global: false`. With options, they are merged over the plugin's
     * (as a route's `config.rateLimit`). Its permits are released when the response closes. Do not add
     * it to a route the plugin already limits: that counts the request twice (`RL_DOUBLE_COUNT`).
     *
     * Also the key controls of every limit of the plugin, in every context it is registered in, on
     * every instance sharing the store (see `KeyControls`): `resetKey(key)` (for example after a
     * successful login: its next request starts with a full quota, a lockout is lifted; a Redis store
     * tells the other instances' deny caches; rejects when a limit's store fails or times out),
     * `blockKey(key, duration)` and `unblockKey(key)` (bans: `bans: true`), `setOverride(key,
     * algorithm, { ttl, limit })`, `getOverride(key)` and `clearOverride(key)` (`overrides: true`).
     */
    rateLimit: KeyControls & ((options?: RouteRateLimitOptions) => RateLimitHook);
  }
  interface FastifyContextConfig {
    /** This route's limit: options merged over the plugin's, or false for no limit. */
    rateLimit?: RouteRateLimitOptions | false;
  }
}

/**
 * Rate-limit plugin for Fastify 5 (a fastify-plugin, so it applies to the routes of the instance it
 * is registered on): `app.register(rateLimit, { algorithm: fixedWindow({ limit: 100, window: '1m' }) })`,
 * with or without `await` (routes declared before the plugin loaded are limited too), then per route
 * `{ config: { rateLimit: { cost: 5 } } }` (merged over the plugin's options) or
 * `{ config: { rateLimit: false } }`. A route that sets `limits`, `algorithm`, `prefix` or `store` has
 * only its own limits: they replace the plugin's (as in @fastify/rate-limit). Requests that end in 404
 * are not limited, unless the not-found handler asks: `app.setNotFoundHandler({ preHandler: app.rateLimit() }, …)`.
 *
 * Options are validated at registration (plugin options) and at route declaration (route options; for
 * a route declared before the plugin loaded, at its first request, answered 500 when bad), throwing an
 * InvalidOptionError naming the field. `request.rateLimit` holds the outcome. A denied
 * request gets 429 (503 when a fail-closed store failed) with Retry-After and a problem+json body (or
 * `onLimit`); a key or cost function that throws goes to Fastify's error handler (500) and charges
 * nothing; a shaped request is held, and one whose client leaves is dropped before the handler; a
 * concurrency permit is released once, when the reply has been sent, or, when the client left while
 * the handler ran, when the handler's work is over (its reply sent to nobody, or its promise settled:
 * the permit guards the work, not the connection; its lease bounds a handler that never ends). The
 * same under `app.inject()`. A memory store the plugin created is closed on `onClose`.
 */
export const rateLimit = fp(rateLimitPlugin, { fastify: '5.x', name: '@rl/fastify' });
export default rateLimit;

/** The key of the request's `Idempotency-Key` header, or undefined: `{ idempotencyKey: idempotencyKeyHeader }`. */
export function idempotencyKeyHeader(request: FastifyRequest): string | undefined {
  return idempotencyKeyFrom(request.headers);
}
