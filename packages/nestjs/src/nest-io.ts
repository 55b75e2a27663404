import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitResult } from '@rl/core';
import {
  PROBLEM_CONTENT_TYPE,
  nodeResponseEvents,
  forwardableError,
  problemBody,
  type DoubleCountCheck,
  type ResponseIO,
} from '@rl/core/http';
import type { OnLimitHandler, RateLimitOptions } from './options.js';
import {
  nestLogger,
  nodeResponseOf,
  platformHeaders,
  sendBody,
  setStatusCode,
  type NestRequest,
  type NestResponse,
} from './platform.js';

/** What a guard answers Nest: admitted (true), or later (a hold); a request it answered itself, never (see {@link nestIO}). */
export type GuardAnswer = boolean | Promise<boolean>;

/** Content type of a body `onLimit` returns (sent as JSON). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * What the guard answers Nest for a request it has answered itself (a denial) or that it drops (the
 * client left): a promise that never settles, so Nest runs neither the handler nor the exception
 * filters, as an Express middleware that answers without calling `next()`. A new promise each time,
 * held by nothing but the request's chain, which is collected with it (a shared pending promise would
 * keep every such request reachable through its reactions).
 */
const neverProceed = (): Promise<never> => new Promise<never>(() => undefined);

/**
 * Nest's side of the shared decision tree (see `Responder`): the platform's request and response,
 * and the guard's execution context in the place of `next`. Admitted: the guard returns true.
 *
 * Denied: the guard sends the denial itself, through the platform's response
 * (`context.switchToHttp().getResponse()`: Express's `res`, Fastify's `reply`), then never settles.
 * Not an exception through Nest's filters: Nest 11's Express adapter rewrites the Content-Type of an
 * exception's body to `application/json` unless it starts with `application/json` (and logs a warning
 * each time), so `application/problem+json` would not survive it; Nest 12 keeps any JSON type. The
 * platforms' own response API sends the same bytes on both majors, without Nest's internals. A guard
 * that returned false would make Nest send 403. `onLimit` may throw an exception of its own instead,
 * which goes to the filters.
 */
export function nestIO(
  onLimit: OnLimitHandler | undefined,
  requestWasSuccessful: RateLimitOptions['requestWasSuccessful'],
  doubleCount: DoubleCountCheck,
): ResponseIO<NestRequest, NestResponse, ExecutionContext, GuardAnswer> {
  // The client leaving and the end of a response, on the platform's Node response. The end of the
  // handler's work when its client left: Nest sends what the handler answered (or its exception
  // filter's answer), `end()` on the closed response.
  const node = nodeResponseEvents<NestRequest, NestResponse>(nodeResponseOf);
  return {
    headers: platformHeaders,
    events: node,
    // What was sent: the Node response's status (an exception filter may have set another than the reply object said).
    statusCode: (_req, res) => nodeResponseOf(res).statusCode,
    requestWasSuccessful,
    // Nest has no path for an error after the response: its logger.
    lateError: (_req, _res, error) =>
      nestLogger.error(
        'rl: the actual cost of a finished request failed; its estimate stands',
        error instanceof Error ? error.stack : String(error),
      ),
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
    sendProblem: (_req, res, body) => {
      sendBody(res, PROBLEM_CONTENT_TYPE, body);
      return neverProceed();
    },
    onLimit:
      onLimit === undefined ? undefined : (_req, res, context, result) => denyWith(onLimit, { context, res, result }),
    // The client left before the handler ran (while the limits ran, or while held): what it took is
    // given back, nothing is sent and the handler never runs.
    drop: (_req, _res, _context, givenBack) => givenBack.then(neverProceed),
  };
}

/** A denied request, for `onLimit`: its guard's context, its response (the status and headers set) and its result. */
interface Denial {
  readonly context: ExecutionContext;
  readonly res: NestResponse;
  readonly result: RateLimitResult;
}

/**
 * The denial through `onLimit`: the exception it throws (to Nest's filters), else the body it returns
 * sent as JSON, or the default problem+json body when it returns nothing; sent as `sendProblem` sends.
 */
async function denyWith(onLimit: OnLimitHandler, { context, res, result }: Denial): Promise<boolean> {
  let body: unknown;
  try {
    body = await onLimit(context, result);
  } catch (error) {
    // Nest's exception zone must not take a falsy throw for "no error".
    throw forwardableError(error);
  }
  if (body === undefined) sendBody(res, PROBLEM_CONTENT_TYPE, problemBody(result));
  else sendBody(res, JSON_CONTENT_TYPE, JSON.stringify(body));
  return neverProceed();
}
