import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { GuardAnswer } from './nest-io.js';
import { RateLimitService } from './rate-limit-service.js';

/**
 * The module's guard: limits the route it guards by its limit (the handler's `@RateLimit` over its
 * controller's over the module's options; none with `@SkipRateLimit()`). App-wide with
 * `RateLimitModule.forRoot({ global: true, … })`, else `@UseGuards(RateLimitGuard)` on a controller
 * or a handler. Only HTTP requests are limited (a WebSocket or microservice context passes).
 *
 * Admitted: `req.rateLimit` (Fastify `request.rateLimit`) is set, the RateLimit headers are on the
 * response, and the handler runs (after the hold of a shaped request; a concurrency permit is
 * released when the response has been sent, or, when the client left, when Nest answers for the
 * handler). Denied: it sends the denial itself (429, or 503 for a fail-closed store outage, the
 * problem+json body or `onLimit`'s) through the platform's response, and the handler never runs;
 * an exception `onLimit` throws goes to Nest's exception filters instead.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(@Inject(RateLimitService) private readonly service: RateLimitService) {}

  canActivate(context: ExecutionContext): GuardAnswer {
    if (context.getType() !== 'http') return true;
    const limit = this.service.limitFor(context.getClass(), context.getHandler());
    return limit === null ? true : limit.run(context);
  }
}
