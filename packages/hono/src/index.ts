// @rl/hono: rate limits on the Fetch API. `rateLimit` is Hono's middleware (Node through
// @hono/node-server, Bun, Deno, Cloudflare Workers); `withRateLimit` wraps any Fetch handler
// (`Bun.serve`, `Deno.serve`, a Worker, a Next.js route handler) and needs no Hono.
export {
  rateLimit,
  idempotencyKeyHeader,
  type RateLimitOptions,
  type RateLimitMiddleware,
  type OnLimitHandler,
} from './hono.js';
export {
  withRateLimit,
  rateLimitOf,
  requestIdempotencyKey,
  type FetchHandler,
  type FetchRateLimitOptions,
  type FetchLimitOptions,
  type FetchActualCost,
  type RateLimitedHandler,
} from './fetch-handler.js';
export { CLIENT_CLOSED_REQUEST } from './fetch-io.js';
export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';
export type { TrustProxy } from '@rl/core/http';
export { rateLimit as default } from './hono.js';
