import type { ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';
import { MemoryStore } from '@rl/store-memory';
import type { HttpRateLimitOptions, RateLimitResult } from '@rl/core';
import {
  HttpRateLimiter,
  claimResponse,
  PROBLEM_CONTENT_TYPE,
  Responder,
  withLimiter,
  checkAdapterFunctions,
  nodeResponseEvents,
  idempotencyKeyFrom,
  nodeHeaderAccess,
  problemBody,
  forwardableError,
  type FrameworkBinding,
  type LimiterHandle,
  type NodeResponseEvents,
  type ResponseIO,
} from '@rl/core/http';

export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';

declare module 'koa' {
  interface DefaultState {
    /**
     * The outcome of the last rl middleware that ran for this request; absent before any ran, or when
     * every one skipped it. (Koa's `DefaultState` is otherwise `any`: this one member is typed.)
     */
    rateLimit?: RateLimitResult;
  }
}

/**
 * Sets the response of a denied request (`ctx.body`, ...). `ctx.status` (429, or 503 for a fail-closed
 * store outage), Retry-After and the RateLimit headers are already set. When it leaves `ctx.body`
 * empty, the default problem+json body is sent.
 */
export type OnLimitHandler = (ctx: Context, result: RateLimitResult) => unknown;

/** Options of {@link rateLimit}: the shared options of every adapter, plus `onLimit` and `requestWasSuccessful`. */
export interface RateLimitOptions extends HttpRateLimitOptions<Context> {
  /** Replaces the default denial body (RFC 9457 `application/problem+json` with `retryAfter`). */
  onLimit?: OnLimitHandler;
  /**
   * With `skipFailedRequests` or `skipSuccessfulRequests`: whether a finished response counts as a
   * success (sync or async). Default: the status sent is below 400.
   */
  requestWasSuccessful?: (ctx: Context) => boolean | Promise<boolean>;
}

/** A Koa middleware, with the limiter behind it (`limiter`, `resetKey`, `on`: see `LimiterHandle`). */
export interface RateLimitMiddleware extends LimiterHandle<Context, RateLimitMiddleware> {
  /** Returns what downstream returns when it decided at once (a local store), otherwise a promise. */
  (ctx: Context, next: Next): unknown;
}

const koaBinding: FrameworkBinding<Context> = {
  owner: 'rateLimit',
  adapterOptions: ['onLimit', 'requestWasSuccessful'],
  clientIp: (ctx) => ctx.ip,
  requestHeaders: (ctx) => ctx.headers,
  requestLine: (ctx) => `${ctx.method} ${ctx.path}`,
  trustsProxy: (ctx) => ctx.app.proxy === true,
  trustProxyAdvice: 'Set app.proxy = true and app.maxIpsCount = <number of proxies>',
  // maxIpsCount 0 (Koa's default) reads the whole X-Forwarded-For, and ctx.ip is its leftmost entry.
  trustsAllProxies: (ctx) => ctx.app.proxy === true && !(ctx.app.maxIpsCount > 0),
  trustAllProxiesAdvice: 'Set app.maxIpsCount = <number of proxies> beside app.proxy = true',
  createStore: () => new MemoryStore(),
  checkAdapterOptions: checkAdapterFunctions(
    'rateLimit',
    'a function (ctx, result) that sets the denial response',
    '(ctx)',
  ),
};

/**
 * Rate-limit middleware for Koa 2 and 3:
 * `app.use(rateLimit({ algorithm: slidingWindowLog({ limit: 5, window: '1m' }) }))`.
 *
 * Options are validated here (an `InvalidOptionError` naming the field, synchronously). Per
 * request: the limits run, `ctx.state.rateLimit` is set, the RateLimit headers are written; a denied
 * request gets 429 (or 503 when a fail-closed store failed) with Retry-After and a problem+json body
 * (or `onLimit`); a shaped request is held for its delay (a client that leaves meanwhile never reaches
 * the downstream middleware and its slot is given back); a concurrency permit is released once, when
 * the downstream throws or the response has been sent, or, when the client left while downstream ran,
 * when downstream returns (the permit guards the work, not the connection; its lease bounds a
 * downstream that never returns). A key or cost function that throws propagates to
 * Koa's error handling (500) and charges no limit.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  // The binding checks onLimit and requestWasSuccessful before the limiter takes its namespace.
  const limiter = new HttpRateLimiter<Context>(options, koaBinding);
  const responder = new Responder(limiter, koaIO(options.onLimit, limiter, options.requestWasSuccessful));

  // With a local store and plain key/cost functions, the result is there at once: downstream runs
  // in the same tick (`return next()`), without an extra promise. Otherwise the rest runs when the
  // result arrives.
  const middleware = function rateLimitMiddleware(ctx: Context, next: Next): unknown {
    let result: RateLimitResult | undefined | Promise<RateLimitResult | undefined>;
    try {
      result = limiter.decide(ctx);
    } catch (error) {
      // As from an async middleware: a rejection, whoever calls it (an Error: Koa answers no other).
      return Promise.reject(forwardableError(error));
    }
    if (result instanceof Promise)
      return result.then(
        (r) => responder.respond(ctx, ctx.res, next, r),
        (error: unknown) => Promise.reject(forwardableError(error)),
      );
    return responder.respond(ctx, ctx.res, next, result);
  } as RateLimitMiddleware;

  return withLimiter(middleware, limiter);
}

/** Koa's side of the shared decision tree (see `Responder`): `ctx`, its Node response, `next`. */
function koaIO(
  onLimit: OnLimitHandler | undefined,
  limiter: HttpRateLimiter<Context>,
  requestWasSuccessful: RateLimitOptions['requestWasSuccessful'],
): ResponseIO<Context, ServerResponse, Next, unknown> {
  const { hasLeases, doubleCount } = limiter;
  // The client leaving and the end of a response, on `ctx.res`; downstream's return is the end of the work (see nextHoldingPermits).
  const node = nodeResponseEvents<Context, ServerResponse>((res) => res);
  return {
    headers: nodeHeaderAccess,
    events: node,
    // What was sent: Koa's own status may differ from the Node response's after an error.
    statusCode: (_ctx, res) => res.statusCode,
    requestWasSuccessful: requestWasSuccessful === undefined ? undefined : (ctx) => requestWasSuccessful(ctx),
    // Koa's path for errors outside the middleware chain: the app's 'error' event (its default logs them).
    lateError: (ctx, _res, error) => ctx.app.emit('error', error, ctx),
    // The first rl middleware on this request marks its context (one per request, a plain object:
    // cheaper than looking the headers up on the Node response) and sets its headers directly.
    // An earlier rl result on this request goes to the double-count check.
    record: (ctx, _res, result) => {
      const state = ctx.state;
      const earlier = state.rateLimit;
      state.rateLimit = result;
      if (earlier !== undefined) doubleCount.check(earlier, result);
      return claimResponse(ctx);
    },
    proceed: (_ctx, res, next, result) =>
      hasLeases && result !== undefined ? nextHoldingPermits(next, result, node, res) : next(),
    setStatus: (ctx, _res, statusCode) => {
      ctx.response.status = statusCode;
    },
    sendProblem: (ctx, res, body) => {
      // What `ctx.type = PROBLEM_CONTENT_TYPE` sets (a full media type: Koa's mime lookup returns it
      // unchanged), without the lookup; the headers are not sent yet (they were just written).
      res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      ctx.response.body = body;
      return undefined;
    },
    onLimit:
      onLimit === undefined
        ? undefined
        : (ctx, _res, _next, result) => callOnLimit(onLimit, ctx, result, limiter.response.headers.names),
    // The client is gone: nothing to send, and downstream must not run.
    drop: (ctx, _res, _next, givenBack) =>
      givenBack.then(() => {
        ctx.respond = false;
      }),
  };
}

/**
 * Runs the user's `onLimit`. What it throws (`ctx.throw(429, 'Slow down')`, koa-ratelimit's `throw`)
 * goes to Koa's error handling, which removes every header of the response and sets the error's
 * `headers`: the RateLimit headers and `Retry-After` already set (`names`) are put there, beneath any
 * the error gives, so the 429 keeps them (koa-ratelimit's thrown 429 does).
 */
async function callOnLimit(
  onLimit: OnLimitHandler,
  ctx: Context,
  result: RateLimitResult,
  names: readonly string[],
): Promise<void> {
  try {
    await onLimit(ctx, result);
  } catch (error) {
    // Koa's error handling answers nothing for a thrown `null` or `undefined`: the request would hang.
    const forwarded = forwardableError(error) as Error & { headers?: Record<string, unknown> };
    const kept: Record<string, string> = {};
    for (const name of names) {
      const value = ctx.response.get(name);
      if (value !== '') kept[name] = value;
    }
    // A copy of the error with the headers: the one thrown may be thrown again for the next denial
    // (a constant), whose headers are its own; Koa reads `status`, `expose` and `headers` of it.
    const withHeaders = Object.create(forwarded) as Error & { headers: Record<string, unknown> };
    withHeaders.headers = { ...kept, ...forwarded.headers };
    throw withHeaders;
  }
  if (ctx.body === undefined || ctx.body === null) {
    ctx.type = PROBLEM_CONTENT_TYPE;
    ctx.body = problemBody(result);
  }
}

/**
 * Runs downstream holding a concurrency permit: a throw releases it at once (a sent response releases
 * it at its end). Downstream's return is the end of the work: Koa writes nothing on a response whose
 * client has left, so a permit whose client left while downstream ran is released then.
 */
async function nextHoldingPermits(
  next: Next,
  result: RateLimitResult,
  node: NodeResponseEvents<Context, ServerResponse>,
  res: ServerResponse,
): Promise<void> {
  try {
    await next();
  } catch (error) {
    await result.release({ failed: true });
    throw error;
  } finally {
    node.workDone(res);
  }
}

export default rateLimit;

/** The key of the request's `Idempotency-Key` header, or undefined: `rateLimit({ idempotencyKey: idempotencyKeyHeader })`. */
export function idempotencyKeyHeader(ctx: Context): string | undefined {
  return idempotencyKeyFrom(ctx.headers);
}
