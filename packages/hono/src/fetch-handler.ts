import { RateLimitError, type HttpRateLimitOptions, type LimitOptions, type RateLimitResult } from '@rl/core';
import {
  FetchAnswer,
  HttpRateLimiter,
  PROBLEM_CONTENT_TYPE,
  Responder,
  checkOptionNames,
  emitWarning,
  errorProblemBody,
  runtimeClientAddress,
  withLimiter,
  idempotencyKeyFrom,
  forwardableError,
  type LimiterHandle,
  type TrustProxy,
} from '@rl/core/http';
import { FETCH_ADAPTER_OPTIONS, fetchBinding } from './binding.js';
import { fetchIO, type FetchIdiom } from './fetch-io.js';

/** A Fetch handler: `Bun.serve({ fetch })`, `Deno.serve(handler)`, a Worker's `fetch`, a Next.js route handler. */
export type FetchHandler<Args extends unknown[]> = (request: Request, ...rest: Args) => Response | Promise<Response>;

/** An `actualCost` of a Fetch handler: the request and the response it answered, when the response's body has been sent. */
export type FetchActualCost = (request: Request, response: Response) => number | Promise<number>;

/** A limit of {@link withRateLimit}: the shared limit options, with `actualCost` reading the `Response`. */
export interface FetchLimitOptions extends Omit<LimitOptions<Request>, 'actualCost'> {
  actualCost?: FetchActualCost;
}

/** Options of {@link withRateLimit}: the shared options of every adapter, with the request a Fetch `Request`. */
export interface FetchRateLimitOptions extends Omit<HttpRateLimitOptions<Request>, 'limits' | 'actualCost'> {
  limits?: readonly FetchLimitOptions[];
  /** The response's real cost, when its body has been sent (see the shared `actualCost`). */
  actualCost?: FetchActualCost;
  /**
   * The response of a denied request (its status, 429 or 503, is `result.statusCode`), or nothing for
   * the default problem+json body; the RateLimit headers and Retry-After are added to it.
   */
  onLimit?: (
    request: Request,
    result: RateLimitResult,
  ) => Response | undefined | void | Promise<Response | undefined | void>;
  /** With `skipFailedRequests` or `skipSuccessfulRequests`: whether the response counts as a success. Default: its status is below 400. */
  requestWasSuccessful?: (request: Request, response: Response) => boolean | Promise<boolean>;
  /** The proxies in front of the app whose `X-Forwarded-For` is believed: `false` none (default), a number of proxies, `true` every one. */
  trustProxy?: TrustProxy;
  /**
   * The address of the peer that sent the request, given the handler's arguments. Default: `Bun.serve`'s
   * `server.requestIP`, `Deno.serve`'s `info.remoteAddr`, `@hono/node-server`'s socket, the
   * `CF-Connecting-IP` Cloudflare Workers set; a Next.js route handler or a `Request` made in code has
   * none (give `key`, or `trustProxy` behind a proxy that sets `X-Forwarded-For`): without a `key`, such a
   * request is answered 500 `RL_INVALID_KEY`.
   */
  clientAddress?: (request: Request, ...rest: unknown[]) => string | undefined;
}

/** A rate-limited Fetch handler, with the limiter behind it (`limiter`, `resetKey`, `blockKey`, `on`: see `LimiterHandle`). */
export type RateLimitedHandler<Args extends unknown[]> = ((request: Request, ...rest: Args) => Promise<Response>) &
  LimiterHandle<Request, FetchHandler<Args>> & {
    /** Gives back what the limits' quota leases hold, then closes the store this handler's limiter created. */
    close(): Promise<void>;
  };

/**
 * The arguments a runtime passed beside each request being handled (its server, connection info,
 * env): what the client address is read from. Set by the outermost wrapper of the request (the one
 * that finds none) and by an inner one called with arguments of its own; forgotten when the outermost
 * answers, so that the same `Request` handled again later is a new request.
 */
const runtimeArguments = new WeakMap<Request, readonly unknown[]>();
/** The result of the last wrapper that decided each request: {@link rateLimitOf}. */
const results = new WeakMap<Request, RateLimitResult>();

/**
 * The rate-limit result of a request `withRateLimit` let through (undefined when it skipped it), for
 * the handler: `rateLimitOf(request)?.remaining`, `rateLimitOf(request)?.settle(tokens)`.
 */
export function rateLimitOf(request: Request): RateLimitResult | undefined {
  return results.get(request);
}

/**
 * Wraps a Fetch handler with rate limits: `Bun.serve({ fetch: withRateLimit(handler, options) })`,
 * `Deno.serve(withRateLimit(handler, options))`, `export const GET = withRateLimit(handler, options)`
 * in a Next.js route, a Worker's `fetch`. The options, the headers, the 429/503 responses, holds,
 * concurrency permits, counting by outcome and settling are those of every rl middleware; the handler
 * reads its result with {@link rateLimitOf}. A request rl refuses to decide (no client address
 * without a `key`, a key or cost that is no valid one: an `RL_*` error) is answered 500 with a
 * problem+json body carrying the error's `code` (see {@link errorProblemBody}), as the frameworks' error
 * handlers answer it, and the first of each code is a process warning (there is no error handler to log
 * it); an error of the user's own (a key or cost function that throws) rejects the call (the runtime
 * answers 500 and logs it). Neither charges a limit.
 */
export function withRateLimit<Args extends unknown[]>(
  handler: FetchHandler<Args>,
  options: FetchRateLimitOptions,
): RateLimitedHandler<Args> {
  // Options that are no object are a typed error here, before anything reads them.
  const given = checkOptionNames(options, 'withRateLimit', FETCH_ADAPTER_OPTIONS);
  const clientAddress =
    options.clientAddress ?? ((request: Request, context?: unknown) => runtimeClientAddress(request, context));
  const binding = fetchBinding<Request>(
    'withRateLimit',
    given,
    {
      remoteAddress: (request) => clientAddress(request, ...(runtimeArguments.get(request) ?? [])),
      headers: (request) => request.headers,
      line: (request) => `${request.method} ${pathOf(request.url)}`,
    },
    {
      onLimit: 'a function (request, result) returning the denial response',
      requestWasSuccessful: '(request, response)',
    },
  );
  const limiter = new HttpRateLimiter<Request>(withResponseArguments(options), binding);
  const requestWasSuccessful = options.requestWasSuccessful;
  const idiom: FetchIdiom<Request, Args> = {
    keep: (request, result) => {
      const earlier = results.get(request);
      results.set(request, result);
      return earlier;
    },
    proceed: (request, rest) => handler(request, ...rest),
    // What the handler answered (undefined for a WebSocket upgrade's, whose connection is no HTTP response now).
    responseOf: (_request, returned) => returned as Response | undefined,
    failing: undefined,
    onLimit:
      options.onLimit === undefined
        ? undefined
        : (request, result) =>
            (options.onLimit!(request, result) ?? undefined) as Response | undefined | Promise<Response | undefined>,
    requestWasSuccessful:
      requestWasSuccessful === undefined
        ? undefined
        : (request, answer) => requestWasSuccessful(request, answer.response!),
  };
  const headers = limiter.response.headers;
  const responder = new Responder(limiter, fetchIO(idiom, limiter.doubleCount), 'withRateLimit');

  // The codes of the rl errors this handler has warned about (each once).
  const warned = new Set<string>();
  const refused = (error: RateLimitError): Response => {
    if (!warned.has(error.code)) {
      warned.add(error.code);
      emitWarning(error);
    }
    return new Response(errorProblemBody(error), { status: 500, headers: { 'content-type': PROBLEM_CONTENT_TYPE } });
  };
  const respond = async (request: Request, rest: Args): Promise<Response> => {
    let result: ReturnType<typeof limiter.decide>;
    try {
      result = limiter.decide(request);
      if (result instanceof Promise) result = await result;
    } catch (error) {
      if (error instanceof RateLimitError) return refused(error);
      throw forwardableError(error);
    }
    // A wrapper around this one (the same `Request`) writes its headers beneath these, on this answer.
    return (await responder.respond(request, new FetchAnswer(request, result, headers), rest, result))!;
  };
  const limited = async function rateLimited(request: Request, ...rest: Args): Promise<Response> {
    const outermost = !runtimeArguments.has(request);
    // A request answered before (the same `Request` handled again) starts afresh: its own result chain.
    if (outermost) results.delete(request);
    if (outermost || rest.length > 0) runtimeArguments.set(request, rest);
    try {
      return await respond(request, rest);
    } finally {
      if (outermost) runtimeArguments.delete(request);
    }
  } as RateLimitedHandler<Args>;
  limited.close = () => limiter.close();
  return withLimiter(limited, limiter) as RateLimitedHandler<Args>;
}

/** The options with each `actualCost` given the `Response` (the shared layer passes the middleware's answer). */
function withResponseArguments(options: FetchRateLimitOptions): HttpRateLimitOptions<Request> {
  const adapt = (f: FetchActualCost | undefined) =>
    f === undefined || typeof f !== 'function'
      ? f
      : (request: Request, answer: FetchAnswer) => f(request, answer.response!);
  const adapted = { ...options } as Record<string, unknown>;
  if (options.actualCost !== undefined) adapted.actualCost = adapt(options.actualCost);
  if (Array.isArray(options.limits))
    adapted.limits = options.limits.map((limit) =>
      limit?.actualCost === undefined ? limit : { ...limit, actualCost: adapt(limit.actualCost) },
    );
  return adapted as HttpRateLimitOptions<Request>;
}

function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start === -1) return '/';
  const query = url.indexOf('?', start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

/** The key of the request's `Idempotency-Key` header, or undefined: `withRateLimit(handler, { idempotencyKey: requestIdempotencyKey })`. */
export function requestIdempotencyKey(request: Request): string | undefined {
  return idempotencyKeyFrom(request.headers);
}
