import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { withLimiter, type LimiterHandle } from '@rl/core/http';
import { SKIP_RATE_LIMIT } from './decorators.js';
import type { GuardAnswer } from './nest-io.js';
import { NestLimit } from './nest-limit.js';
import { warnUnlimitedContext } from './unlimited-context.js';
import type { RateLimitOptions } from './options.js';
import type { NestRequest } from './platform.js';

/** A guard with a limit of its own (see {@link createRateLimitGuard}), with the limiter behind it (`limiter`, `resetKey`, `on`: see `LimiterHandle`). */
export interface StandaloneRateLimitGuard extends CanActivate, LimiterHandle<NestRequest, StandaloneRateLimitGuard> {
  canActivate(context: ExecutionContext): GuardAnswer;
  /** Gives back what its quota leases hold, then closes the store it created (none when the options give one). */
  close(): Promise<void>;
}

/**
 * A second, separate limit as a guard instance, outside the module:
 * `@UseGuards(createRateLimitGuard({ limits: [{ name: 'exports', algorithm: fixedWindow({ limit: 100, window: '1h' }) }] }))`.
 * Its options are the module's (checked here: an `InvalidOptionError` naming `createRateLimitGuard.<field>`),
 * taken as they are: `@RateLimit` does not change it, `@SkipRateLimit()` does skip it. Every request it
 * guards is charged in its limit after the module's (the headers list both); for one limit with a
 * cost per route, use the module's limit and `@RateLimit({ cost })` instead. Pass it a store (the
 * module's own Redis store, say); without one it creates a memory store, which {@link StandaloneRateLimitGuard.close} closes.
 */
export function createRateLimitGuard(options: RateLimitOptions): StandaloneRateLimitGuard {
  const limit = new NestLimit(options, 'createRateLimitGuard');
  const reflector = new Reflector();
  const unlimited = new Set<string>();
  const guard = {
    canActivate(context: ExecutionContext): GuardAnswer {
      const type = context.getType();
      if (type !== 'http') {
        warnUnlimitedContext(type, unlimited);
        return true;
      }
      if (
        reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT, [
          context.getHandler(),
          context.getClass(),
        ]) === true
      )
        return true;
      return limit.run(context);
    },
    close: () => limit.close(),
  };
  return withLimiter(guard, limit.limiter) as StandaloneRateLimitGuard;
}
