import { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
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
  type Timers,
} from '@rl/core';

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

/** Options of {@link rateLimit}: the shared options of every adapter, plus `onLimit`. */
export interface RateLimitOptions extends HttpRateLimitOptions<Request> {
  /** Replaces the default denial body (RFC 9457 `application/problem+json` with `retryAfter`). */
  onLimit?: OnLimitHandler;
}

/** An Express middleware, with the limiter behind it. */
export interface RateLimitMiddleware {
  /** Returns nothing when it decided at once (a local store), otherwise a promise settled once it has continued. */
  (req: Request, res: Response, next: NextFunction): void | Promise<void>;
  /** The http-layer limiter: its `limiters` emit `'storeError'` events. */
  readonly limiter: HttpRateLimiter<Request>;
  /** Forgets a key in every limit of this middleware. */
  resetKey(key: string): Promise<void>;
}

const expressBinding: FrameworkBinding<Request> = {
  owner: 'rateLimit',
  adapterOptions: ['onLimit'],
  // Under 'trust proxy' false (Express's default) `req.ip` is the socket's address; reading that
  // directly skips proxy-addr's parsing (about 2 µs a request). Any other setting asks `req.ip`.
  clientIp: (req) => (req.app?.settings?.['trust proxy'] === false ? req.socket?.remoteAddress : req.ip),
  requestHeaders: (req) => req.headers,
  trustsProxy: (req) => Boolean(req.app.get('trust proxy')),
  trustProxyAdvice: "Set app.set('trust proxy', <number of proxies>)",
  createStore: () => new MemoryStore(),
};

/**
 * Each request's `rateLimit` (the result of the last rl middleware that ran for it), behind an
 * accessor on the request prototype: Express swaps the prototype of every request, and adding an
 * own property to such an object costs about 2 µs, a WeakMap entry a third of that.
 */
const results = new WeakMap<object, unknown>();
/** Request prototypes (Express's `app.request`, one per app) whose `rateLimit` is known to be the accessor below. */
const accessorPrototypes = new WeakSet<object>();
let lastAccessorPrototype: object | null = null;
const rateLimitAccessor: PropertyDescriptor = {
  get(this: object): unknown {
    return results.get(this);
  },
  set(this: object, value: unknown): void {
    results.set(this, value);
  },
  enumerable: false,
  configurable: true,
};

/**
 * True when `req.rateLimit` of this request reads {@link results}: its prototype chain reaches
 * Node's `IncomingMessage.prototype` through Express's request prototype, which then carries the
 * accessor (defined here the first time), and nothing on the way (nor the request itself) has a
 * `rateLimit` of its own. Otherwise (a request outside Express, or another library's property)
 * the adapter sets an own property, as plain code would.
 */
function usesAccessor(req: object): boolean {
  const prototype = Object.getPrototypeOf(req) as object | null;
  if (prototype !== lastAccessorPrototype && !accessorPrototypes.has(prototype!)) {
    if (prototype === null || !prepareAccessor(prototype)) return false;
    accessorPrototypes.add(prototype);
  }
  lastAccessorPrototype = prototype;
  return !Object.hasOwn(req, 'rateLimit');
}

function prepareAccessor(prototype: object): boolean {
  // Express's request prototype is the last one before IncomingMessage.prototype, shared by every app of that Express.
  let base: object | null = prototype;
  while (base !== null && Object.getPrototypeOf(base) !== IncomingMessage.prototype) {
    if (Object.hasOwn(base, 'rateLimit')) return false;
    base = Object.getPrototypeOf(base) as object | null;
  }
  if (base === null) return false;
  const existing = Object.getOwnPropertyDescriptor(base, 'rateLimit');
  if (existing === undefined) Object.defineProperty(base, 'rateLimit', rateLimitAccessor);
  else if (existing.get !== rateLimitAccessor.get) return false;
  return true;
}

/**
 * Sets `req.rateLimit` to `result`. Returns true when no rl middleware has set it on this request
 * before (none wrote RateLimit headers on its response), false when one did, undefined when it cannot
 * tell (then the header writer looks at the response).
 */
function setResult(req: Request, result: RateLimitResult): boolean | undefined {
  if (!usesAccessor(req)) {
    req.rateLimit = result;
    return undefined;
  }
  const first = !results.has(req);
  results.set(req, result);
  return first;
}

/**
 * Rate-limit middleware for Express 4 and 5:
 * `app.use(rateLimit({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }))`.
 *
 * Options are validated here (an {@link InvalidOptionError} naming the field, synchronously). Per
 * request: the limits run, `req.rateLimit` is set, the RateLimit headers are written; a denied
 * request gets 429 (or 503 when a fail-closed store failed) with Retry-After and a problem+json body
 * (or `onLimit`); a shaped request is held for its delay (a client that leaves meanwhile never
 * reaches the next handler and its slot is given back); a concurrency permit is released once, when
 * the response closes (finished, aborted, or after the error handler answered a throw). A key or cost
 * function that throws goes to Express's error handling (`next(error)`) and charges no limit.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const limiter = new HttpRateLimiter<Request>(options, expressBinding);
  const onLimit = options.onLimit;
  if (onLimit !== undefined && typeof onLimit !== 'function') {
    throw new InvalidOptionError('rateLimit.onLimit', onLimit, 'a function (req, res, next, result) that sends the denial response');
  }
  const hasLeases = limiter.hasLeases;
  // Where this middleware keeps the result on the response, for its 'close' listener (one per middleware, not per request).
  const slot = Symbol('rl.rateLimit');
  function releaseOnClose(this: Response): void {
    void (this as unknown as Record<symbol, RateLimitResult>)[slot]!.release();
  }

  // With a local store and plain key/cost functions, the result is there at once: next() runs in
  // the same tick, without a promise. Otherwise the rest runs when the result arrives.
  const middleware = function rateLimitMiddleware(req: Request, res: Response, next: NextFunction): void | Promise<void> {
    let result: RateLimitResult | undefined | Promise<RateLimitResult | undefined>;
    try {
      result = limiter.decide(req);
    } catch (error) {
      next(error);
      return;
    }
    if (result instanceof Promise) {
      return result.then(
        (r) => proceed(req, res, next, r),
        (error: unknown) => next(error),
      );
    }
    return proceed(req, res, next, result);
  } as RateLimitMiddleware;

  function proceed(req: Request, res: Response, next: NextFunction, result: RateLimitResult | undefined): void | Promise<void> {
    if (result === undefined) {
      next();
      return;
    }
    const first = setResult(req, result);
    limiter.writeHeaders(nodeHeaderAccess, res, result, first);
    if (!result.allowed) {
      res.statusCode = result.statusCode;
      if (onLimit === undefined) {
        res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
        res.end(problemBody(result));
        return;
      }
      return callOnLimit(onLimit, req, res, next, result);
    }
    if (res.destroyed) {
      // The client left while the limits ran: its 'close' has passed, so give everything back now.
      return result.abandon();
    }
    if (hasLeases) {
      (res as unknown as Record<symbol, RateLimitResult>)[slot] = result;
      res.once('close', releaseOnClose);
    }
    if (result.delayMs > 0) return holdThenNext(res, next, result, limiter.timers);
    next();
  }

  Object.defineProperty(middleware, 'limiter', { value: limiter });
  middleware.resetKey = (key: string) => limiter.resetKey(key);
  return middleware;
}

async function callOnLimit(onLimit: OnLimitHandler, req: Request, res: Response, next: NextFunction, result: RateLimitResult): Promise<void> {
  try {
    await onLimit(req, res, next, result);
  } catch (error) {
    next(error);
  }
}

/** Holds a shaped request for its delay, then continues; a client that leaves meanwhile gives its slot back and never reaches next. */
async function holdThenNext(res: Response, next: NextFunction, result: RateLimitResult, timers: Timers): Promise<void> {
  if (!(await holdRequest(res, result.delayMs, timers))) {
    await result.abandon();
    return;
  }
  next();
}

export default rateLimit;
