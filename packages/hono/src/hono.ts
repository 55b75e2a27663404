import type { Context, MiddlewareHandler, Next } from 'hono';
import type { HttpRateLimitOptions, RateLimitResult } from '@rl/core';
import {
  FetchAnswer,
  HttpRateLimiter,
  Responder,
  checkOptionNames,
  runtimeClientAddress,
  withLimiter,
  idempotencyKeyFrom,
  forwardableError,
  type LimiterHandle,
  type RequestHeaders,
  type TrustProxy,
} from '@rl/core/http';
import { FETCH_ADAPTER_OPTIONS, fetchBinding } from './binding.js';
import { fetchIO, type FetchIdiom } from './fetch-io.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** The outcome of the last rl middleware that ran for this request; undefined before any ran, or when every one skipped it. */
    rateLimit: RateLimitResult | undefined;
  }
}

/**
 * Sets the response of a denied request: return a `Response` (`c.json(...)`, whose status is already
 * 429, or 503 for a fail-closed store outage), or nothing for the default problem+json body. The
 * RateLimit headers and Retry-After are added to what it returns.
 */
export type OnLimitHandler = (
  c: Context,
  result: RateLimitResult,
) => Response | undefined | void | Promise<Response | undefined | void>;

/** Options of {@link rateLimit}: the shared options of every adapter, plus Hono's. */
export interface RateLimitOptions extends HttpRateLimitOptions<Context> {
  /** Replaces the default denial body (RFC 9457 `application/problem+json` with `retryAfter`). */
  onLimit?: OnLimitHandler;
  /**
   * With `skipFailedRequests` or `skipSuccessfulRequests`: whether a finished response counts as a
   * success (sync or async; `c.res` is the response). Default: its status is below 400.
   */
  requestWasSuccessful?: (c: Context) => boolean | Promise<boolean>;
  /**
   * The proxies in front of the app whose `X-Forwarded-For` is believed (Hono has no trust-proxy
   * setting): `false` none (default), a number of proxies (1 for one load balancer), `true` every one.
   */
  trustProxy?: TrustProxy;
  /**
   * The address of the peer that sent the request, for runtimes the default does not read: for
   * example `(c) => getConnInfo(c).remote.address` with the `getConnInfo` of `hono/<runtime>` or
   * `@hono/node-server/conninfo`. Default: `@hono/node-server`'s socket, `Bun.serve`'s `requestIP`,
   * `Deno.serve`'s `remoteAddr`, the `CF-Connecting-IP` Cloudflare Workers set.
   */
  clientAddress?: (c: Context) => string | undefined;
}

/** A Hono middleware, with the limiter behind it (`limiter`, `resetKey`, `blockKey`, `on`: see `LimiterHandle`). */
export interface RateLimitMiddleware extends LimiterHandle<Context, RateLimitMiddleware>, MiddlewareHandler {
  (c: Context, next: Next): Promise<Response | void>;
  /** Gives back what the limits' quota leases hold, then closes the store this middleware created. */
  close(): Promise<void>;
}

/**
 * Rate-limit middleware for Hono, on every runtime Hono runs on (Node with `@hono/node-server`, Bun,
 * Deno, Cloudflare Workers): `app.use(rateLimit({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }))`,
 * or per route: `app.post('/export', rateLimit({...}), handler)`.
 *
 * Options are validated here (an `InvalidOptionError` naming the field, synchronously). Per request:
 * the limits run, `c.get('rateLimit')` is set, the RateLimit headers are put on the response; a denied
 * request gets 429 (or 503 when a fail-closed store failed) with Retry-After and a problem+json body
 * (or `onLimit`'s response); a shaped request is held for its delay (a client that leaves meanwhile never
 * reaches the handler and its slot is given back); a concurrency permit is released once, when the
 * response's body has been sent or cancelled, or the handler threw. A key or cost function that throws
 * goes to Hono's error handling (`app.onError`) and charges no limit.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  // Options that are no object are a typed error here, before anything reads them.
  const given = checkOptionNames(options, 'rateLimit', FETCH_ADAPTER_OPTIONS);
  const clientAddress = options.clientAddress ?? ((c: Context) => runtimeClientAddress(c.req.raw, c.env));
  const binding = fetchBinding<Context>(
    'rateLimit',
    given,
    {
      remoteAddress: clientAddress,
      headers: requestHeaders,
      line: (c) => `${c.req.method} ${c.req.path}`,
    },
    { onLimit: 'a function (c, result) returning the denial response', requestWasSuccessful: '(c)' },
  );
  const limiter = new HttpRateLimiter<Context>(options, binding);
  const requestWasSuccessful = options.requestWasSuccessful;
  const idiom: FetchIdiom<Context, Next> = {
    keep: (c, result) => {
      const earlier = c.get('rateLimit');
      c.set('rateLimit', result);
      return earlier;
    },
    // Hono's shape: `await next()`, then `c.res` is the answer of the rest of the chain.
    proceed: (c, next) => next(),
    responseOf: (c) => c.res,
    // A throw (one Hono's `onError` did not answer): what the runtime answers is shown as `c.res` to
    // `requestWasSuccessful(c)` and `actualCost(c)` (else Hono's default 200).
    failing: (c) => {
      c.res = new Response(null, { status: 500 });
    },
    onLimit:
      options.onLimit === undefined
        ? undefined
        : (c, result) =>
            (options.onLimit!(c, result) ?? undefined) as Response | undefined | Promise<Response | undefined>,
    requestWasSuccessful: requestWasSuccessful === undefined ? undefined : (c) => requestWasSuccessful(c),
  };
  const headers = limiter.response.headers;
  const responder = new Responder(limiter, fetchIO(idiom, limiter.doubleCount));

  // Hono's own shape (hono/body-limit, hono/timeout): the work before, `await next()` (in `proceed`),
  // then `c.res` read and replaced. Two rl middlewares on one request are two middlewares: the outer
  // one writes its headers beneath the inner one's, on the response the inner one answered with.
  const middleware = async function rateLimitMiddleware(c: Context, next: Next): Promise<Response | void> {
    let result: ReturnType<typeof limiter.decide>;
    try {
      result = limiter.decide(c);
      if (result instanceof Promise) result = await result;
    } catch (error) {
      // Hono hands only an Error to `app.onError`: a thrown `undefined` would be the runtime's bare 500.
      throw forwardableError(error);
    }
    // The status a denial's `onLimit` answers with (`c.json(...)` reads it).
    if (result !== undefined && result.enforcedDeniedBy !== -1) c.status(result.statusCode as 429);
    const answer = new FetchAnswer(c.req.raw, result, headers, (c.env as NodeBindings | undefined)?.outgoing);
    const response = await responder.respond(c, answer, next, result);
    // Set over `c.res` (which reading makes from the headers earlier middlewares set with `c.header()`):
    // Hono's setter puts those on a denial, as on the handler's response (no Set-Cookie twice).
    if (response !== undefined && c.res !== response) c.res = response;
  } as RateLimitMiddleware;
  middleware.close = () => limiter.close();
  return withLimiter(middleware, limiter);
}

/** What `@hono/node-server` passes as `c.env`: the Node request and response under the Fetch ones. */
interface NodeBindings {
  readonly incoming?: { readonly headers?: RequestHeaders };
  readonly outgoing?: { readonly destroyed?: boolean };
}

/** The request's headers: Node's own record under `@hono/node-server` (no `Headers` built), else the Fetch request's. */
function requestHeaders(c: Context): RequestHeaders {
  return (c.env as NodeBindings | undefined)?.incoming?.headers ?? c.req.raw.headers;
}

/** The key of the request's `Idempotency-Key` header, or undefined: `rateLimit({ idempotencyKey: idempotencyKeyHeader })`. */
export function idempotencyKeyHeader(c: Context): string | undefined {
  return idempotencyKeyFrom(requestHeaders(c));
}
