import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidOptionError, type Store } from '@rl/core';
import { HttpRateLimiter, Responder, nodeResponseEvents, type OutageLogger } from '@rl/core/http';
import { fastifyBinding } from './binding.js';
import { fail, fastifyIO, type HookDone } from './fastify-io.js';
import type { RouteRateLimitOptions } from './options.js';

/** The hook a limit runs in. */
export type Hook = 'onRequest' | 'preHandler';

/** A prepared limit of one route (or of every route that inherits the plugin's options). */
export interface RouteLimit {
  readonly limiter: HttpRateLimiter<FastifyRequest>;
  readonly hook: Hook;
  readonly handler: (request: FastifyRequest, reply: FastifyReply, done: HookDone) => void;
  /**
   * For a limit with concurrency permits: tells it that the route handler's work on `reply` is over
   * (its promise settled), which releases the permit of a request whose client left while it ran,
   * also when the handler sent nothing (see {@link limitedHandler}); undefined for a limit without.
   */
  readonly workDone: ((reply: FastifyReply) => void) | undefined;
}

/** Where and how a limit is prepared. */
export interface LimitSetting {
  /** Names the options in errors (`rateLimit`, `GET /export config.rateLimit`). */
  readonly owner: string;
  readonly hook: Hook;
  /** The plugin's memory store, created when a limit needs it. */
  readonly createStore: () => Store;
  readonly logger: OutageLogger;
}

/** The `hook` option, checked once where it is given (plugin or route options). */
export function parseHook(value: unknown, owner: string): Hook {
  if (value === undefined) return 'onRequest';
  if (value !== 'onRequest' && value !== 'preHandler')
    throw new InvalidOptionError(`${owner}.hook`, value, "'onRequest' or 'preHandler'");
  return value;
}

/** Prepares one limit from its (merged) options. */
export function prepare(options: RouteRateLimitOptions, setting: LimitSetting): RouteLimit {
  const { owner, hook, createStore, logger } = setting;
  // The binding checks onLimit and requestWasSuccessful before the limiter takes its namespace.
  const limiter = new HttpRateLimiter<FastifyRequest>(options, fastifyBinding(owner, createStore, logger));
  // The client leaving and the end of a response on `reply.raw`: 'finish' (which `inject()`'s response
  // emits too), or, when the client left while the handler ran, the reply sent later (`end()` on the
  // closed response) or the route handler's promise settled (`workDone`).
  const node = nodeResponseEvents<FastifyRequest, FastifyReply>((reply) => reply.raw);
  const io = fastifyIO({
    onLimit: options.onLimit,
    requestWasSuccessful: options.requestWasSuccessful,
    doubleCount: limiter.doubleCount,
    node,
  });
  const responder = new Responder(limiter, io, owner);

  // A callback hook, not an async one: with a local store and plain key/cost functions the result
  // is there at once and `done()` continues in the same tick, without a promise. (Fastify 5: a hook
  // either is async or calls done, never both; this one never returns a promise.) A denied request
  // is answered with reply.send() and done is not called; a throw goes to Fastify's error handler
  // (a falsy value wrapped in an Error: `done(null)` would let the request through).
  function rateLimitHook(request: FastifyRequest, reply: FastifyReply, done: HookDone): void {
    let result: ReturnType<typeof limiter.decide>;
    try {
      result = limiter.decide(request);
    } catch (error) {
      fail(done, error);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (r) => {
          try {
            void responder.respond(request, reply, done, r);
          } catch (error) {
            fail(done, error);
          }
        },
        (error: unknown) => fail(done, error),
      );
      return;
    }
    void responder.respond(request, reply, done, result);
  }
  return { limiter, hook, handler: rateLimitHook, workDone: limiter.hasLeases ? node.workDone : undefined };
}

/** A route handler (`this` is the Fastify instance). */
type RouteHandler = (this: unknown, request: FastifyRequest, reply: FastifyReply) => unknown;

/**
 * `handler` telling `workDone` when the promise it returns settles: the end of the work a concurrency
 * permit guards. Fastify sends nothing for an async handler that returns nothing once its client has
 * left, so the reply's end never comes; this does. What the handler returns is returned unchanged
 * (a synchronous handler ends its work by sending its reply).
 */
export function limitedHandler(handler: RouteHandler, workDone: (reply: FastifyReply) => void): RouteHandler {
  return function rateLimitedHandler(this: unknown, request, reply) {
    const answer = handler.call(this, request, reply);
    if (answer instanceof Promise) {
      const done = (): void => workDone(reply);
      answer.then(done, done);
    }
    return answer;
  };
}
