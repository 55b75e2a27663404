import type { Context, Next } from 'koa';
import { MemoryStore } from '@rl/store-memory';
import {
  HttpRateLimiter,
  InvalidOptionError,
  PROBLEM_CONTENT_TYPE,
  holdRequest,
  nodeHeaderAccess,
  problemBody,
  type FrameworkBinding,
  type HttpRateLimitOptions,
  type RateLimitResult,
} from '@rl/core';

export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';

/**
 * Sets the response of a denied request (`ctx.body`, ...). `ctx.status` (429, or 503 for a fail-closed
 * store outage), Retry-After and the RateLimit headers are already set. When it leaves `ctx.body`
 * empty, the default problem+json body is sent.
 */
export type OnLimitHandler = (ctx: Context, result: RateLimitResult) => unknown;

/** Options of {@link rateLimit}: the shared options of every adapter, plus `onLimit`. */
export interface RateLimitOptions extends HttpRateLimitOptions<Context> {
  /** Replaces the default denial body (RFC 9457 `application/problem+json` with `retryAfter`). */
  onLimit?: OnLimitHandler;
}

/** A Koa middleware, with the limiter behind it. */
export interface RateLimitMiddleware {
  (ctx: Context, next: Next): Promise<void>;
  /** The http-layer limiter: its `limiters` emit `'storeError'` events. */
  readonly limiter: HttpRateLimiter<Context>;
  /** Forgets a key in every limit of this middleware. */
  resetKey(key: string): Promise<void>;
}

const koaBinding: FrameworkBinding<Context> = {
  owner: 'rateLimit',
  adapterOptions: ['onLimit'],
  clientIp: (ctx) => ctx.ip,
  requestHeaders: (ctx) => ctx.headers,
  trustsProxy: (ctx) => ctx.app.proxy === true,
  trustProxyAdvice: 'Set app.proxy = true and app.maxIpsCount = <number of proxies>',
  createStore: () => new MemoryStore(),
};

/**
 * Rate-limit middleware for Koa 2 and 3:
 * `app.use(rateLimit({ algorithm: slidingWindowLog({ limit: 5, window: '1m' }) }))`.
 *
 * Options are validated here (an {@link InvalidOptionError} naming the field, synchronously). Per
 * request: the limits run, `ctx.state.rateLimit` is set, the RateLimit headers are written; a denied
 * request gets 429 (or 503 when a fail-closed store failed) with Retry-After and a problem+json body
 * (or `onLimit`); a shaped request is held for its delay (a client that leaves meanwhile never reaches
 * the downstream middleware and its slot is given back); a concurrency permit is released once, when
 * the downstream throws or the response closes. A key or cost function that throws propagates to
 * Koa's error handling (500) and charges no limit.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const limiter = new HttpRateLimiter<Context>(options, koaBinding);
  const onLimit = options.onLimit;
  if (onLimit !== undefined && typeof onLimit !== 'function') {
    throw new InvalidOptionError('rateLimit.onLimit', onLimit, 'a function (ctx, result) that sets the denial response');
  }
  const hasLeases = limiter.hasLeases;
  // Where this middleware keeps the result on the Node response, for its 'close' listener (one per middleware, not per request).
  const slot = Symbol('rl.rateLimit');
  function releaseOnClose(this: object): void {
    void (this as Record<symbol, RateLimitResult>)[slot]!.release();
  }

  const middleware = async function rateLimitMiddleware(ctx: Context, next: Next): Promise<void> {
    const result = await limiter.evaluate(ctx);
    if (result === undefined) return next();
    ctx.state.rateLimit = result;
    limiter.writeHeaders(nodeHeaderAccess, ctx.res, result);
    if (!result.allowed) {
      ctx.status = result.statusCode;
      if (onLimit !== undefined) await onLimit(ctx, result);
      if (ctx.body === undefined || ctx.body === null) {
        ctx.type = PROBLEM_CONTENT_TYPE;
        ctx.body = problemBody(result);
      }
      return;
    }
    if (ctx.res.destroyed) {
      // The client left while the limits ran: its 'close' has passed, so give everything back now.
      await result.abandon();
      ctx.respond = false;
      return;
    }
    if (result.delayMs > 0 && !(await holdRequest(ctx.res, result.delayMs))) {
      // The client left while held: nothing to send, and downstream must not run.
      await result.abandon();
      ctx.respond = false;
      return;
    }
    if (!hasLeases) return next();
    (ctx.res as unknown as Record<symbol, RateLimitResult>)[slot] = result;
    ctx.res.once('close', releaseOnClose);
    try {
      await next();
    } catch (error) {
      await result.release();
      throw error;
    }
  } as RateLimitMiddleware;
  Object.defineProperty(middleware, 'limiter', { value: limiter });
  middleware.resetKey = (key: string) => limiter.resetKey(key);
  return middleware;
}

export default rateLimit;
