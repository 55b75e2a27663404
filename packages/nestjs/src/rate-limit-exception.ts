import { HttpException } from '@nestjs/common';
import type { RateLimitResult } from '@rl/core';

/**
 * The exception the guard throws for a denied request: status 429 (or 503 when a fail-closed store
 * failed), its response the problem+json document (or what `onLimit` returned). Nest's exception
 * filters send it; the RateLimit headers and Retry-After are already on the response, and for the
 * default body so is `Content-Type: application/problem+json`. Catch it (`@Catch(RateLimitException)`)
 * to answer denials your own way; `result` says why.
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
