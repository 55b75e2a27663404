import { HttpException } from '@nestjs/common';
import type { RateLimitResult } from '@rl/core';

/**
 * A denial as an `HttpException`, for an `onLimit` that sends denials through your exception filters:
 * `onLimit: (context, result) => { throw new RateLimitException({ message: 'slow down' }, result) }`,
 * then `@Catch(RateLimitException)` answers them (`result` says why; its status is the result's, 429
 * or 503). The guard itself never throws it: it sends the default problem+json denial through the
 * platform's response (see `RateLimitGuard`). The RateLimit headers and Retry-After are already on
 * the response when `onLimit` runs.
 */
export class RateLimitException extends HttpException {
  constructor(
    body: string | Record<string, unknown>,
    /** The denied request's result (its limit, retry time, the policy that denied). */
    readonly result: RateLimitResult,
  ) {
    super(body, result.statusCode);
    this.name = 'RateLimitException';
  }
}
