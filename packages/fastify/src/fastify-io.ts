import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitResult } from '@rl/core';
import {
  PROBLEM_CONTENT_TYPE,
  forwardableError,
  problemBody,
  type DoubleCountCheck,
  type NodeResponseEvents,
  type ResponseIO,
} from '@rl/core/http';
import { replyHeaders } from './binding.js';
import type { OnLimitHandler, RouteRateLimitOptions } from './options.js';

/** The `done` callback of a Fastify hook. */
export type HookDone = (error?: Error) => void;

/** Ends a hook with what a user function threw, as an error Fastify cannot take for success (see `forwardableError`). */
export function fail(done: HookDone, error: unknown): void {
  done(forwardableError(error) as Error);
}

/** How one limit answers in Fastify. */
export interface FastifyIOOptions {
  readonly onLimit: OnLimitHandler | undefined;
  readonly requestWasSuccessful: RouteRateLimitOptions['requestWasSuccessful'];
  readonly doubleCount: DoubleCountCheck;
  /** How the limit hears a client leave and the end of its responses, on `reply.raw` (see `nodeResponseEvents`). */
  readonly node: NodeResponseEvents<FastifyRequest, FastifyReply>;
}

/** Fastify's side of the shared decision tree (see `Responder`). */
export function fastifyIO({
  onLimit,
  requestWasSuccessful,
  doubleCount,
  node,
}: FastifyIOOptions): ResponseIO<FastifyRequest, FastifyReply, HookDone, void> {
  return {
    headers: replyHeaders,
    events: node,
    statusCode: (_request, reply) => reply.statusCode,
    requestWasSuccessful,
    // Where Fastify puts errors of hooks that run after the response: the request's logger.
    lateError: (request, _reply, error) =>
      request.log.error({ err: error }, 'rl: the actual cost of a finished request failed; its estimate stands'),
    // `request.rateLimit` is decorated (null on every request) and every rl limit that runs sets it:
    // null means no rl limit wrote headers on this reply yet, so the first one sets them without reading
    // them back, and nothing is added to the reply. An earlier result (a plugin of a parent context)
    // goes to the double-count check.
    record: (request, _reply, result) => {
      const earlier = request.rateLimit;
      request.rateLimit = result;
      if (earlier === null || earlier === undefined) return true;
      doubleCount.check(earlier, result);
      return false;
    },
    proceed: (_request, _reply, done) => done(),
    setStatus: (_request, reply, statusCode) => {
      reply.code(statusCode);
    },
    sendProblem: (_request, reply, body) => {
      void reply.type(PROBLEM_CONTENT_TYPE).send(body);
    },
    onLimit:
      onLimit === undefined
        ? undefined
        : (request, reply, done, result) => {
            sendOnLimit(onLimit, request, reply, result).catch((error: unknown) => {
              // The denial's 429 is set already: Fastify's error handler would keep it for an error
              // without a status of its own, where every other adapter answers 500.
              reply.code(500);
              fail(done, error);
            });
          },
    // The client is gone: nothing to send, and the handler must not run.
    drop: (_request, reply, done, givenBack) => {
      givenBack.then(() => reply.hijack()).catch(done);
    },
  };
}

/** Sends the denial through `onLimit`: its own reply, the payload it returns, or the default body. */
async function sendOnLimit(
  onLimit: OnLimitHandler,
  request: FastifyRequest,
  reply: FastifyReply,
  result: RateLimitResult,
): Promise<void> {
  const payload = await onLimit(request, reply, result);
  if (reply.sent) return;
  // Not awaited: a reply is a thenable that settles only when the response has been sent.
  if (payload !== undefined) void reply.send(payload);
  else void reply.type(PROBLEM_CONTENT_TYPE).send(problemBody(result));
}
