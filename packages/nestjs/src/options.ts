import type { ExecutionContext } from '@nestjs/common';
import type { HttpRateLimitOptions, RateLimitResult } from '@rl/core';
import type { NestRequest, NestResponse } from './platform.js';

/**
 * Decides the response of a denied request: the status (429, or 503 for a fail-closed store outage),
 * Retry-After and the RateLimit headers are already set on the response. Return the body to send (the
 * guard sends it as JSON, `application/json; charset=utf-8`, with that status), or nothing for the
 * default problem+json body; or throw an exception (an `HttpException` of yours, or a
 * `RateLimitException`), which Nest's exception filters answer instead.
 */
export type OnLimitHandler = (context: ExecutionContext, result: RateLimitResult) => unknown;

/**
 * The options of a limit: the shared options of every rl adapter (`algorithm` or `limits`, `key`,
 * `cost`, `skip`, `store`, `headers`, `wait`, …), plus `onLimit` and `requestWasSuccessful`. Key,
 * cost, skip and the other request functions receive the platform's request (Express `req`, Fastify
 * `request`); `actualCost` and `requestWasSuccessful` also its response (Express `res`, Fastify `reply`).
 */
export interface RateLimitOptions<Req = NestRequest, Res = NestResponse> extends HttpRateLimitOptions<Req, Res> {
  /** Replaces the default denial body (RFC 9457 `application/problem+json` with `retryAfter`). */
  onLimit?: OnLimitHandler;
  /**
   * With `skipFailedRequests` or `skipSuccessfulRequests`: whether a finished response counts as a
   * success (sync or async). Default: the status sent is below 400.
   */
  requestWasSuccessful?: (req: Req, res: Res) => boolean | Promise<boolean>;
}

/** The options of `RateLimitModule.forRoot`: the module's limit, and whether its guard applies to every route. */
export interface RateLimitModuleOptions<Req = NestRequest, Res = NestResponse> extends RateLimitOptions<Req, Res> {
  /**
   * Registers the guard as an app-wide guard (`APP_GUARD`): every route of the app is limited unless
   * it says `@SkipRateLimit()`. Default false: apply `@UseGuards(RateLimitGuard)` to the controllers
   * or routes to limit.
   */
  global?: boolean;
}

/**
 * The options of `@RateLimit(...)` on a controller or a route handler, merged over the module's (a
 * handler's over its controller's), as @rl/fastify merges a route's `config.rateLimit` (one rule:
 * `mergeRouteOptions` of @rl/core/http): a handler that sets `algorithm`, `limits`, `prefix` or
 * `store` gets a limit of its own (its own state, under `<module prefix>:<Controller>.<handler>` when
 * the module has a prefix and the handler gives none); one that changes only the cost, key, headers, …
 * spends the limit above it (the controller's, else the module's).
 */
export type RateLimitDecoratorOptions<Req = NestRequest, Res = NestResponse> = Partial<RateLimitOptions<Req, Res>>;
