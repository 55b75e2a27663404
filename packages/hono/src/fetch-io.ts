import type { RateLimitResult } from '@rl/core';
import { FetchExchange, fetchHeaderAccess, problemBody, warnLateError, type DoubleCountCheck, type ResponseIO } from '@rl/core/http';

/**
 * What the two Fetch adapters (Hono's middleware, `withRateLimit`) tell the shared `ResponseIO` apart:
 * where a request's result is kept, how the request goes on, and the `onLimit` of their idiom.
 */
export interface FetchIdiom<Req, Next> {
  /** Keeps `result` as the request's (`c.set('rateLimit')`, `rateLimitOf(request)`); returns the one it replaces. */
  keep(req: Req, result: RateLimitResult): RateLimitResult | undefined;
  /** Runs the rest (`await next()`, the handler) and answers its response. */
  proceed(req: Req, exchange: FetchExchange, next: Next, result: RateLimitResult | undefined): Promise<Response | undefined>;
  /** The user's `onLimit` (its response, or undefined for the default body), when given. */
  readonly onLimit: ((req: Req, result: RateLimitResult) => Response | undefined | Promise<Response | undefined>) | undefined;
  /** The user's `requestWasSuccessful`, when given. */
  readonly requestWasSuccessful: ((req: Req, exchange: FetchExchange) => boolean | Promise<boolean>) | undefined;
}

/**
 * The exchange of each request in flight, shared by every rl middleware and wrapper on it, whichever
 * entry they came from (a `withRateLimit` handler called from a Hono route with `c.req.raw`, a Hono
 * app's `fetch` wrapped by `withRateLimit`), so that their headers merge and the outermost finishes.
 */
const exchanges = new WeakMap<Request, FetchExchange>();

/**
 * Runs `respond` with the exchange of `request`: the one an enclosing rl middleware or wrapper made,
 * or (`outermost` true) a new one, forgotten once `respond` settles, so that the same `Request`
 * handled again later starts afresh.
 */
export async function inExchange<T>(request: Request, connection: { readonly destroyed?: boolean } | undefined, respond: (exchange: FetchExchange, outermost: boolean) => Promise<T>): Promise<T> {
  const shared = exchanges.get(request);
  if (shared !== undefined) return respond(shared, false);
  const exchange = new FetchExchange(request, connection);
  exchanges.set(request, exchange);
  try {
    return await respond(exchange, true);
  } finally {
    exchanges.delete(request);
  }
}

/** The status of a response whose client left before it was answered: no client reads it (nginx's "client closed request"). */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * The `ResponseIO` of a Fetch runtime over a request's {@link FetchExchange}: headers are gathered on
 * the exchange and put on the response the request ends with; a denial is a new response; a client
 * that leaves is the request's `AbortSignal`; the end of a response is the end of its body.
 */
export function fetchIO<Req, Next>(idiom: FetchIdiom<Req, Next>, doubleCount: DoubleCountCheck): ResponseIO<Req, FetchExchange, Next, Promise<Response | undefined>> {
  const onLimit = idiom.onLimit;
  return {
    headers: fetchHeaderAccess,
    nodeResponse: (exchange) => exchange,
    onEnd: (req, exchange, result, ended) => exchange.watch(req, result, ended),
    statusCode: (_req, exchange) => exchange.status,
    requestWasSuccessful: idiom.requestWasSuccessful,
    lateError: warnLateError,
    record: (req, exchange, result) => {
      const earlier = idiom.keep(req, result);
      if (earlier !== undefined) doubleCount.check(earlier, result);
      return exchange.claim();
    },
    proceed: (req, exchange, next, result) => idiom.proceed(req, exchange, next, result),
    setStatus: (_req, exchange, statusCode) => {
      exchange.status = statusCode;
    },
    sendProblem: (_req, exchange, body) => Promise.resolve(exchange.denial(exchange.status, body)),
    onLimit: onLimit === undefined ? undefined : (req, exchange, _next, result) => callOnLimit(onLimit, req, exchange, result),
    drop: (_req, _exchange, _next, givenBack) => givenBack.then(() => new Response(null, { status: CLIENT_CLOSED_REQUEST })),
  };
}

async function callOnLimit<Req>(onLimit: NonNullable<FetchIdiom<Req, unknown>['onLimit']>, req: Req, exchange: FetchExchange, result: RateLimitResult): Promise<Response> {
  const status = exchange.status;
  const response = await onLimit(req, result);
  return exchange.denial(status, response ?? problemBody(result));
}
