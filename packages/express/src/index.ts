import type { NextFunction, Request, Response } from 'express';
import { MemoryStore } from '@rl/store-memory';
import type { HttpRateLimitOptions, RateLimitResult } from '@rl/core';
import {
  HttpRateLimiter,
  PROBLEM_CONTENT_TYPE,
  Responder,
  withLimiter,
  checkAdapterFunctions,
  nodeResponseEvents,
  idempotencyKeyFrom,
  warnLateError,
  forwardableError,
  nodeHeaderAccess,
  trustsEveryAddress,
  type DoubleCountCheck,
  type FrameworkBinding,
  type LimiterHandle,
  type ResponseIO,
} from '@rl/core/http';
import { setRequestResult } from './request-result.js';

export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The outcome of the last rate-limit middleware that ran for this request (absent when skipped). */
      rateLimit?: RateLimitResult;
    }
  }
}

/** Sends the response for a denied request. Status (429, or 503 for a fail-closed store outage), Retry-After and the RateLimit headers are already set. */
export type OnLimitHandler = (req: Request, res: Response, next: NextFunction, result: RateLimitResult) => unknown;

/** Options of {@link rateLimit}: the shared options of every adapter, plus `onLimit` and `requestWasSuccessful`. */
export interface RateLimitOptions extends HttpRateLimitOptions<Request, Response> {
  /** Replaces the default denial body (RFC 9457 `application/problem+json` with `retryAfter`). */
  onLimit?: OnLimitHandler;
  /**
   * With `skipFailedRequests` or `skipSuccessfulRequests`: whether a finished response counts as a
   * success (sync or async). Default: `res.statusCode < 400`.
   */
  requestWasSuccessful?: (req: Request, res: Response) => boolean | Promise<boolean>;
}

/** An Express middleware, with the limiter behind it (`limiter`, `resetKey`, `on`: see `LimiterHandle`). */
export interface RateLimitMiddleware extends LimiterHandle<Request, RateLimitMiddleware> {
  /** Returns nothing when it decided at once (a local store), otherwise a promise settled once it has continued. */
  (req: Request, res: Response, next: NextFunction): void | Promise<void>;
}

const expressBinding: FrameworkBinding<Request> = {
  owner: 'rateLimit',
  adapterOptions: ['onLimit', 'requestWasSuccessful'],
  // Under 'trust proxy' false (Express's default) `req.ip` is the socket's address; reading that
  // directly skips proxy-addr's parsing, a large part of a request's cost. Any other setting asks `req.ip`.
  clientIp: (req) => (req.app?.settings?.['trust proxy'] === false ? req.socket?.remoteAddress : req.ip),
  requestHeaders: (req) => req.headers,
  requestLine: (req) => `${req.method} ${req.originalUrl.split('?')[0]!}`,
  trustsProxy: (req) => Boolean(req.app.get('trust proxy')),
  trustProxyAdvice: "Set app.set('trust proxy', <number of proxies>)",
  // Express compiles every form of the setting (true, a count, 'loopback', a list, a function) into 'trust proxy fn'.
  trustsAllProxies: (req) =>
    trustsEveryAddress(req.app.get('trust proxy fn') as (address: string, hop: number) => unknown),
  trustAllProxiesAdvice:
    "Set app.set('trust proxy', <number of proxies>) or the proxies' addresses (for example 'loopback' or '10.0.0.0/8') instead of true",
  createStore: () => new MemoryStore(),
  checkAdapterOptions: checkAdapterFunctions(
    'rateLimit',
    'a function (req, res, next, result) that sends the denial response',
    '(req, res)',
  ),
};

/**
 * Rate-limit middleware for Express 4 and 5:
 * `app.use(rateLimit({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }))`.
 *
 * Options are validated here (an `InvalidOptionError` naming the field, synchronously). Per
 * request: the limits run, `req.rateLimit` is set, the RateLimit headers are written; a denied
 * request gets 429 (or 503 when a fail-closed store failed) with Retry-After and a problem+json body
 * (or `onLimit`); a shaped request is held for its delay (a client that leaves meanwhile never
 * reaches the next handler and its slot is given back); a concurrency permit is released once, when
 * the response has been sent (or the error handler answered a throw), or, when the client left while
 * the handler ran, when the handler ends the response (`res.end()`: the permit guards the work, not
 * the connection; its lease bounds a handler that never ends). A key or cost
 * function that throws goes to Express's error handling (`next(error)`; a falsy value or `'route'`
 * wrapped in an Error, see `forwardableError`) and charges no limit.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  // The binding checks onLimit and requestWasSuccessful before the limiter takes its namespace.
  const limiter = new HttpRateLimiter<Request>(options, expressBinding);
  const responder = new Responder(
    limiter,
    expressIO(options.onLimit, options.requestWasSuccessful, limiter.doubleCount),
  );

  // With a local store and plain key/cost functions, the result is there at once: next() runs in
  // the same tick, without a promise. Otherwise the rest runs when the result arrives.
  const middleware = function rateLimitMiddleware(
    req: Request,
    res: Response,
    next: NextFunction,
  ): void | Promise<void> {
    let result: RateLimitResult | undefined | Promise<RateLimitResult | undefined>;
    try {
      result = limiter.decide(req);
    } catch (error) {
      next(forwardableError(error));
      return;
    }
    if (result instanceof Promise) {
      return result.then(
        (r) => responder.respond(req, res, next, r),
        (error: unknown) => next(forwardableError(error)),
      );
    }
    return responder.respond(req, res, next, result);
  } as RateLimitMiddleware;

  return withLimiter(middleware, limiter);
}

/** Express's side of the shared decision tree (see `Responder`). */
function expressIO(
  onLimit: OnLimitHandler | undefined,
  requestWasSuccessful: RateLimitOptions['requestWasSuccessful'],
  doubleCount: DoubleCountCheck,
): ResponseIO<Request, Response, NextFunction, void | Promise<void>> {
  // The client leaving and the end of a response, on the Node response (`res` is one). The end of the
  // handler's work when its client left: its `res.end()` on the closed response.
  const node = nodeResponseEvents<Request, Response>((res) => res);
  return {
    headers: nodeHeaderAccess,
    events: node,
    statusCode: (_req, res) => res.statusCode,
    requestWasSuccessful,
    // Express has no path for an error after the response: a process warning carries it.
    lateError: warnLateError,
    record: (req, _res, result) => setRequestResult(req, result, doubleCount),
    proceed: (_req, _res, next) => next(),
    setStatus: (_req, res, statusCode) => {
      res.statusCode = statusCode;
    },
    sendProblem: (_req, res, body) => {
      res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      res.end(body);
    },
    onLimit:
      onLimit === undefined ? undefined : (req, res, next, result) => callOnLimit(onLimit, req, res, next, result),
    // The client is gone: nothing to send, and the next handler must not run.
    drop: (_req, _res, _next, givenBack) => givenBack,
  };
}

async function callOnLimit(
  onLimit: OnLimitHandler,
  req: Request,
  res: Response,
  next: NextFunction,
  result: RateLimitResult,
): Promise<void> {
  try {
    await onLimit(req, res, next, result);
  } catch (error) {
    next(forwardableError(error));
  }
}

export default rateLimit;

/** The key of the request's `Idempotency-Key` header, or undefined: `rateLimit({ idempotencyKey: idempotencyKeyHeader })`. */
export function idempotencyKeyHeader(req: Request): string | undefined {
  return idempotencyKeyFrom(req.headers);
}
