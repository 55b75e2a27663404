// `@rl/nestjs`: rl's rate limits in Nest's idiom, on its Express and Fastify platforms. The module
// (rate-limit-module.ts) provides the guard (rate-limit-guard.ts), the limits' handle
// (rate-limit-service.ts) and the store of its limits as a provider (storage.ts); the decorators
// (decorators.ts) choose a route's limit. Each limit (nest-limit.ts) is the shared HTTP layer of
// @rl/core/http, answering through Nest's side of its decision tree (nest-io.ts) on either platform
// (platform.ts).
import type { RateLimitResult } from '@rl/core';
import { idempotencyKeyFrom } from '@rl/core/http';
import type { NestRequest } from './platform.js';

export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';
export type { KeyControls } from '@rl/core/http';
export { RateLimitModule, RATE_LIMIT_MODULE_OPTIONS, type RateLimitModuleAsyncOptions } from './rate-limit-module.js';
export { RateLimitGuard } from './rate-limit-guard.js';
export { RateLimitService, type RateLimitServiceSetting, type GuardDefaults } from './rate-limit-service.js';
export { getStorageToken } from './storage.js';
export { RateLimit, SkipRateLimit, CurrentRateLimit, RATE_LIMIT_OPTIONS, SKIP_RATE_LIMIT } from './decorators.js';
export { RateLimitException } from './rate-limit-exception.js';
export { createRateLimitGuard, type StandaloneRateLimitGuard } from './standalone-guard.js';
export type { RateLimitOptions, RateLimitModuleOptions, RateLimitDecoratorOptions, OnLimitHandler } from './options.js';
export type { NestRequest, NestResponse } from './platform.js';

declare module 'http' {
  interface IncomingMessage {
    /**
     * The outcome of the last rl guard that ran for this request (Express's `req` is the Node
     * request); absent when none ran or every one skipped it. `@CurrentRateLimit()` reads it too.
     */
    rateLimit?: RateLimitResult;
  }
}

/** The key of the request's `Idempotency-Key` header, or undefined: `RateLimitModule.forRoot({ idempotencyKey: idempotencyKeyHeader, … })`. */
export function idempotencyKeyHeader(req: NestRequest): string | undefined {
  return idempotencyKeyFrom((req as { headers: Record<string, string | string[] | undefined> }).headers);
}
