import type { RateLimitResult } from '@rl/core';
import {
  forwardableError,
  problemBody,
  warnLateError,
  type DoubleCountCheck,
  type FetchAnswer,
  type ResponseIO,
} from '@rl/core/http';

/**
 * What the two Fetch adapters (Hono's middleware, `withRateLimit`) tell the shared `ResponseIO` apart:
 * where a request's result is kept, how the rest of the chain runs, and the `onLimit` of their idiom.
 */
export interface FetchIdiom<Req, Next> {
  /** Keeps `result` as the request's (`c.set('rateLimit')`, `rateLimitOf(request)`); returns the one it replaces. */
  keep(req: Req, result: RateLimitResult): RateLimitResult | undefined;
  /**
   * Runs the rest of the chain (`next()`, the handler): what it returns, a promise or a value, which
   * {@link responseOf} reads once it has settled. Not an async function of its own: the one that awaits
   * it ({@link fetchIO}'s `proceed`) is the only one a request adds.
   */
  proceed(req: Req, next: Next): unknown;
  /** The response the rest of the chain answered with, once `returned` (what {@link proceed} returned, settled) is there: none from a handler that answered no `Response` (Bun's WebSocket upgrade). */
  responseOf(req: Req, returned: unknown): Response | undefined;
  /** The rest of the chain threw: shows the 500 the runtime will send where the framework keeps the response (Hono's `c.res`), for `requestWasSuccessful` and `actualCost`. */
  readonly failing: ((req: Req) => void) | undefined;
  /** The user's `onLimit` (its response, or undefined for the default body), when given. */
  readonly onLimit:
    ((req: Req, result: RateLimitResult) => Response | undefined | Promise<Response | undefined>) | undefined;
  /** The user's `requestWasSuccessful`, when given. */
  readonly requestWasSuccessful: ((req: Req, answer: FetchAnswer) => boolean | Promise<boolean>) | undefined;
}

/** The status of a response whose client left before it was answered: no client reads it (nginx's "client closed request"). */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * The `ResponseIO` of a Fetch runtime over the {@link FetchAnswer} of one middleware to one request:
 * the answer is a value, the response of the rest of the chain or a denial's, with the middleware's
 * headers put on it beneath those of the rl middlewares inside it; a client that leaves is the
 * request's `AbortSignal`; the end of a response is the end of its body.
 */
export function fetchIO<Req, Next>(
  idiom: FetchIdiom<Req, Next>,
  doubleCount: DoubleCountCheck,
): ResponseIO<Req, FetchAnswer, Next, Promise<Response | undefined>> {
  const onLimit = idiom.onLimit;
  return {
    // The answer puts the headers on the response it answers with (`FetchAnswer.respond`, `deny`).
    headers: undefined,
    events: {
      clientLeft: (_req, answer) => answer.clientLeft,
      onClientLeave: (_req, answer, listener) => answer.onLeave(listener),
      onEnd: (req, answer, result, ended) => answer.watch(req, result, ended),
    },
    statusCode: (_req, answer) => answer.status,
    requestWasSuccessful: idiom.requestWasSuccessful,
    lateError: warnLateError,
    record: (req, _answer, result) => {
      const earlier = idiom.keep(req, result);
      if (earlier !== undefined) doubleCount.check(earlier, result);
      return undefined;
    },
    proceed: (req, answer, next) => proceed(idiom, req, answer, next),
    setStatus: (_req, answer, statusCode) => {
      answer.status = statusCode;
    },
    sendProblem: (_req, answer, body) => Promise.resolve(answer.deny(body)),
    onLimit:
      onLimit === undefined
        ? undefined
        : async (req, answer, _next, result) => {
            let response: Response | undefined;
            try {
              response = await onLimit(req, result);
            } catch (error) {
              throw forwardableError(error); // an Error, whatever was thrown (Hono's onError takes no other)
            }
            return answer.deny(response ?? problemBody(result));
          },
    drop: (_req, _answer, _next, givenBack) =>
      givenBack.then(() => new Response(null, { status: CLIENT_CLOSED_REQUEST })),
  };
}

/**
 * Runs the rest of the chain, then answers with its response. A throw is the 500 the runtime sends:
 * shown where the framework keeps the response, then heard as the end of the response, and the throw
 * goes on. A handler that answered no `Response` (the connection is a WebSocket's now) has nothing to
 * put headers on: what waits for the end hears it now, as a finished answer.
 */
async function proceed<Req, Next>(
  idiom: FetchIdiom<Req, Next>,
  req: Req,
  answer: FetchAnswer,
  next: Next,
): Promise<Response | undefined> {
  let response: Response | undefined;
  try {
    response = idiom.responseOf(req, await idiom.proceed(req, next));
  } catch (error) {
    idiom.failing?.(req);
    answer.failed();
    throw error;
  }
  if (response === undefined) {
    answer.respond(new Response(null));
    return undefined;
  }
  return answer.respond(response);
}
