import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitResult, Store } from '@rl/core';
import { HttpRateLimiter, Responder, forwardableError, type PrefixRegistry } from '@rl/core/http';
import { nestIO, type GuardAnswer } from './nest-io.js';
import type { RateLimitOptions } from './options.js';
import { nestBinding, type NestRequest, type NestResponse } from './platform.js';

/**
 * One limit as Nest runs it: the shared HTTP layer's limiter (options checked here, once: an
 * `InvalidOptionError` naming `<owner>.<field>`) and its responder. Built once per module, controller
 * or decorated handler, never per request.
 */
export class NestLimit {
  readonly limiter: HttpRateLimiter<NestRequest>;
  private readonly responder: Responder<NestRequest, NestResponse, ExecutionContext, GuardAnswer>;

  /** `createStore`: the default store, when the options give none; `prefixes`: where a default namespace is taken. */
  constructor(options: RateLimitOptions, owner: string, createStore?: () => Store, prefixes?: PrefixRegistry) {
    // The binding checks onLimit and requestWasSuccessful before the limiter takes its namespace.
    this.limiter = new HttpRateLimiter<NestRequest>(
      options as RateLimitOptions<NestRequest, never>,
      nestBinding(owner, createStore),
      prefixes,
    );
    this.responder = new Responder(
      this.limiter,
      nestIO(options.onLimit, options.requestWasSuccessful, this.limiter.doubleCount),
      owner,
    );
  }

  /**
   * Runs the limit for the request of `context`: true when admitted (at once with a local store and
   * plain functions, else a promise, after a hold for a shaped request); a denial is sent here and
   * the promise never settles (or it rejects with what `onLimit` throws). A key or cost function that throws rejects with
   * its error (a falsy value wrapped in an Error), which Nest's exception filters answer (500 by
   * default), and charges nothing.
   */
  run(context: ExecutionContext): GuardAnswer {
    const http = context.switchToHttp();
    const req = http.getRequest<NestRequest>();
    const res = http.getResponse<NestResponse>();
    let result: RateLimitResult | undefined | Promise<RateLimitResult | undefined>;
    try {
      result = this.limiter.decide(req);
    } catch (error) {
      return Promise.reject(forwardableError(error));
    }
    if (result instanceof Promise) {
      return result.then(
        (r) => this.responder.respond(req, res, context, r),
        (error: unknown) => Promise.reject(forwardableError(error)),
      );
    }
    return this.responder.respond(req, res, context, result);
  }

  /** Gives back what the limit's quota leases hold, then closes a store it created. */
  close(): Promise<void> {
    return this.limiter.close();
  }
}
