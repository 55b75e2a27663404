import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { RateLimitResult } from '@rl/core';
import type { GuardAnswer } from './nest-io.js';
import type { NestRequest } from './platform.js';
import { RateLimitService, type GuardDefaults } from './rate-limit-service.js';

/** A guard class's {@link GuardDefaults}, and the instance running each request it guards. */
interface ClassDefaults extends GuardDefaults {
  readonly running: WeakMap<NestRequest, RateLimitGuard>;
}

/**
 * The module's guard: limits the route it guards by its limit (the handler's `@RateLimit` over its
 * controller's over the module's options; none with `@SkipRateLimit()`). App-wide with
 * `RateLimitModule.forRoot({ global: true, … })`, else `@UseGuards(RateLimitGuard)` on a controller
 * or a handler. Only HTTP requests are limited: a GraphQL, WebSocket or microservice context passes,
 * and the first of each kind says so (a process warning, `RL_UNLIMITED_CONTEXT`).
 *
 * Admitted: `req.rateLimit` (Fastify `request.rateLimit`) is set, the RateLimit headers are on the
 * response, and the handler runs (after the hold of a shaped request; a concurrency permit is
 * released when the response has been sent, or, when the client left, when Nest answers for the
 * handler). Denied: it sends the denial itself (429, or 503 for a fail-closed store outage, the
 * problem+json body or `onLimit`'s) through the platform's response, and the handler never runs;
 * an exception `onLimit` throws goes to Nest's exception filters instead.
 *
 * To key requests or answer denials your way, extend it and override {@link getTracker} and
 * {@link onLimit} (as methods: they are looked up when the guard is built), then register your guard
 * in place of this one (`{ provide: APP_GUARD, useClass: MyGuard }`, the module without `global:
 * true`, or `@UseGuards(MyGuard)`). The options' `key` and `onLimit` (the module's, a `@RateLimit`'s)
 * still win where given; the methods are the defaults of the limits your guard runs, on the same
 * state as the module's guard.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  /** The methods this guard's class overrides, for the service (undefined: none, the limits as they are). */
  private readonly defaults: ClassDefaults | undefined;

  constructor(@Inject(RateLimitService) protected readonly service: RateLimitService) {
    const base = RateLimitGuard.prototype;
    const overrides = { key: this.getTracker !== base.getTracker, onLimit: this.onLimit !== base.onLimit };
    this.defaults =
      overrides.key || overrides.onLimit
        ? (service.guardDefaults(this.constructor, () => RateLimitGuard.classDefaults(overrides)) as ClassDefaults)
        : undefined;
  }

  canActivate(context: ExecutionContext): GuardAnswer {
    const type = context.getType();
    if (type !== 'http') {
      this.service.passedUnlimited(type);
      return true;
    }
    const limit = this.service.limitFor(context.getClass(), context.getHandler(), this.defaults);
    if (limit === null) return true;
    // This instance answers for the request (a request-scoped guard is one instance per request).
    this.defaults?.running.set(context.switchToHttp().getRequest<NestRequest>(), this);
    return limit.run(context);
  }

  /**
   * The defaults of a guard class whose methods `overrides` says it overrides: one object per class
   * (the service builds each route's limit with it once, however many instances a request-scoped
   * guard makes: one a request built a limit a request before), each function calling the method of
   * the instance that runs the request.
   */
  private static classDefaults(overrides: { key: boolean; onLimit: boolean }): ClassDefaults {
    const running = new WeakMap<NestRequest, RateLimitGuard>();
    return {
      running,
      key: overrides.key ? (req: NestRequest) => running.get(req)!.getTracker(req) : undefined,
      onLimit: overrides.onLimit
        ? (context: ExecutionContext, result: RateLimitResult) =>
            running.get(context.switchToHttp().getRequest<NestRequest>())!.onLimit(context, result)
        : undefined,
    };
  }

  /**
   * The key of a request (sync or async: a non-empty string), for every limit this guard runs whose
   * options give no `key`. Default: the client IP as the platform resolves it under its trust-proxy
   * setting, IPv6 grouped by the module's `ipv6Subnet` (`RateLimitService.clientKey`). Override it to
   * key by user, API key, tenant, …: `return req.user?.id ?? super.getTracker(req)`.
   */
  protected getTracker(req: NestRequest): string | Promise<string> {
    return this.service.clientKey(req);
  }

  /**
   * Answers a denied request, for every limit this guard runs whose options give no `onLimit` (the
   * same contract as the option): the status (429, or 503 for a fail-closed store outage),
   * `Retry-After` and the RateLimit headers are set; return the body to send (sent as JSON with that
   * status), or nothing for the default problem+json body; or throw an exception (an `HttpException`
   * of yours, a `RateLimitException`), which Nest's exception filters answer instead. Default: nothing.
   */
  protected onLimit(_context: ExecutionContext, _result: RateLimitResult): unknown {
    return undefined;
  }
}
