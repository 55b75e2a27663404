import { SetMetadata, createParamDecorator, type CustomDecorator, type ExecutionContext } from '@nestjs/common';
import { InvalidOptionError, type RateLimitResult } from '@rl/core';
import { checkOptionNames } from '@rl/core/http';
import type { RateLimitDecoratorOptions } from './options.js';
import { ADAPTER_OPTIONS, type NestRequest, type NestResponse } from './platform.js';

/** Metadata key of `@RateLimit(options)`. */
export const RATE_LIMIT_OPTIONS = 'rl:rate-limit-options';
/** Metadata key of `@SkipRateLimit()`. */
export const SKIP_RATE_LIMIT = 'rl:skip-rate-limit';

/**
 * Options for the routes of a controller (on the class) or for one route (on the handler), merged
 * over the module's options, a handler's over its controller's (see {@link RateLimitDecoratorOptions}):
 * `@RateLimit({ cost: 5 })` spends 5 of the module's limit; `@RateLimit({ algorithm: fixedWindow({ limit: 3, window: '1m' }) })`
 * is a limit of its own for that route (or, on a class, one limit shared by its routes). Its limit is
 * built once, when the app starts, by the module's guard (`RateLimitGuard`): it applies where that
 * guard runs (`global: true`, or `@UseGuards(RateLimitGuard)`).
 *
 * Option names are checked here, when the class is defined (an unknown one, a peer library's name
 * among them, is an `InvalidOptionError` naming `@RateLimit.<name>`); the values, merged over the
 * module's, when the app starts (`<Controller>.<handler> @RateLimit.<field>`), never at a request.
 */
export function RateLimit<Req = NestRequest, Res = NestResponse>(
  options: RateLimitDecoratorOptions<Req, Res>,
): CustomDecorator<string> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(
      '@RateLimit',
      options,
      'options merged over the module options, for example { cost: 5 } or { algorithm: fixedWindow({ limit: 3, window: "1m" }) }',
    );
  }
  checkOptionNames(options, '@RateLimit', ADAPTER_OPTIONS);
  return SetMetadata(RATE_LIMIT_OPTIONS, options);
}

/**
 * No rl guard limits this controller or route (`skip`: false on a handler undoes its controller's
 * `@SkipRateLimit()`). The request carries no `rateLimit` and gets no RateLimit headers.
 */
export function SkipRateLimit(skip = true): CustomDecorator<string> {
  if (typeof skip !== 'boolean') throw new InvalidOptionError('@SkipRateLimit', skip, 'true (the default) or false');
  return SetMetadata(SKIP_RATE_LIMIT, skip);
}

/**
 * The handler parameter of the request's rate-limit result (`req.rateLimit`, Fastify `request.rateLimit`):
 * `find(@CurrentRateLimit() limit: RateLimitResult | undefined)`; undefined when no rl guard ran or
 * every one skipped the request. (Named like Nest's `@CurrentUser()` idiom, apart from the
 * `RateLimitResult` type.)
 */
export const CurrentRateLimit: () => ParameterDecorator = createParamDecorator(
  (_data: unknown, context: ExecutionContext): RateLimitResult | undefined =>
    context.switchToHttp().getRequest<{ rateLimit?: RateLimitResult | null }>().rateLimit ?? undefined,
);
