import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitResult } from '@rl/core';
import { PROBLEM_CONTENT_TYPE, nodeResponseEnds, forwardableError, problemBody, type DoubleCountCheck, type ResponseIO } from '@rl/core/http';
import type { OnLimitHandler, RateLimitOptions } from './options.js';
import { nestLogger, nodeResponseOf, platformHeaders, setContentType, setStatusCode, type NestRequest, type NestResponse } from './platform.js';
import { RateLimitException } from './rate-limit-exception.js';

/** What a guard answers Nest: admitted (true), or later (a hold); a denial throws. */
export type GuardAnswer = boolean | Promise<boolean>;

/**
 * Nest's side of the shared decision tree (see `Responder`): the platform's request and response,
 * and the guard's execution context in the place of `next`. Admitted: the guard returns true. Denied:
 * the guard throws a {@link RateLimitException} (a guard that returns false makes Nest send 403),
 * which Nest's exception filters send with the status and headers already set.
 */
export function nestIO(
  onLimit: OnLimitHandler | undefined,
  requestWasSuccessful: RateLimitOptions['requestWasSuccessful'],
  doubleCount: DoubleCountCheck,
): ResponseIO<NestRequest, NestResponse, ExecutionContext, GuardAnswer> {
  return {
    headers: platformHeaders,
    nodeResponse: nodeResponseOf,
    // What was sent: the Node response's status (an exception filter may have set another than the reply object said).
    statusCode: (_req, res) => nodeResponseOf(res).statusCode,
    requestWasSuccessful,
    // Nest has no path for an error after the response: its logger.
    lateError: (_req, _res, error) => nestLogger.error('rl: the actual cost of a finished request failed; its estimate stands', error instanceof Error ? error.stack : String(error)),
    // An earlier rl result on this request (another rl guard, or an rl middleware) goes to the double-count check.
    record: (req: { rateLimit?: RateLimitResult }, _res, result) => {
      const earlier = req.rateLimit;
      req.rateLimit = result;
      if (earlier === undefined || earlier === null) return true;
      doubleCount.check(earlier, result);
      return false;
    },
    proceed: () => true,
    setStatus: (_req, res, statusCode) => setStatusCode(res, statusCode),
    sendProblem: (req: { rateLimit: RateLimitResult }, res, body) => {
      // Nest's filters keep a Content-Type already set when it is a JSON type (problem+json is one).
      setContentType(res, PROBLEM_CONTENT_TYPE);
      throw new RateLimitException(JSON.parse(body) as Record<string, unknown>, req.rateLimit);
    },
    onLimit: onLimit === undefined ? undefined : (_req, _res, context, result) => denyWith(onLimit, context, result),
    // The client left before the handler ran (while the limits ran, or while held): what it took is
    // given back, nothing is sent and the handler never runs, as an Express middleware that never
    // calls next(). The guard's promise never settles. A new promise each time, held by nothing:
    // the request's chain is collected with it (a shared pending promise would keep every dropped
    // request reachable through its reactions).
    drop: (_req, _res, _context, givenBack) => givenBack.then(() => new Promise<never>(() => undefined)),
    // The end of the handler's work when its client left: Nest sends what the handler answered (or its exception filter's answer), `end()` on the closed response.
    onEnd: nodeResponseEnds<NestRequest, NestResponse>(nodeResponseOf).onEnd,
  };
}

/** The denial through `onLimit`: the exception it throws, or a {@link RateLimitException} with its body (or the default one). */
async function denyWith(onLimit: OnLimitHandler, context: ExecutionContext, result: RateLimitResult): Promise<boolean> {
  let body: unknown;
  try {
    body = await onLimit(context, result);
  } catch (error) {
    // Nest's exception zone must not take a falsy throw for "no error".
    throw forwardableError(error);
  }
  if (body === undefined) {
    setContentType(context.switchToHttp().getResponse(), PROBLEM_CONTENT_TYPE);
    throw new RateLimitException(JSON.parse(problemBody(result)) as Record<string, unknown>, result);
  }
  throw new RateLimitException(body as Record<string, unknown>, result);
}
