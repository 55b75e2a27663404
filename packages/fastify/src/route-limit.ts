import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidOptionError, type Store } from '@rl/core';
import { HttpRateLimiter, Responder, type OutageLogger } from '@rl/core/http';
import { fastifyBinding } from './binding.js';
import { fail, fastifyIO, type Held, type HookDone } from './fastify-io.js';
import type { RouteRateLimitOptions } from './options.js';

/** The hook a limit runs in. */
export type Hook = 'onRequest' | 'preHandler';

/** A prepared limit of one route (or of every route that inherits the plugin's options). */
export interface RouteLimit {
  readonly limiter: HttpRateLimiter<FastifyRequest>;
  readonly hook: Hook;
  readonly handler: (request: FastifyRequest, reply: FastifyReply, done: HookDone) => void;
  /**
   * The route hooks that tell the limit its responses' end (`onResponse`: sent; `onRequestAbort`: the
   * client left), for a limit whose admitted requests hold something until then (permits, or units
   * under counting by outcome); undefined otherwise, or when the limit hears the end on the Node
   * response's `'close'` (see {@link LimitSetting.releaseOnClose}).
   */
  readonly endHooks: { readonly onResponse: (request: FastifyRequest) => Promise<void>; readonly onRequestAbort: (request: FastifyRequest) => Promise<void> } | undefined;
}

/** Where and how a limit is prepared. */
export interface LimitSetting {
  /** Names the options in errors (`rateLimit`, `GET /export config.rateLimit`). */
  readonly owner: string;
  readonly hook: Hook;
  /** The plugin's memory store, created when a limit needs it. */
  readonly createStore: () => Store;
  readonly logger: OutageLogger;
  /**
   * The limit hears of the end of its responses on the Node response's `'close'`: it runs on routes
   * without hooks of its own (a route declared before the plugin loaded, or `fastify.rateLimit()`).
   */
  readonly releaseOnClose: boolean;
}

/** The `hook` option, checked once where it is given (plugin or route options). */
export function parseHook(value: unknown, owner: string): Hook {
  if (value === undefined) return 'onRequest';
  if (value !== 'onRequest' && value !== 'preHandler') throw new InvalidOptionError(`${owner}.hook`, value, "'onRequest' or 'preHandler'");
  return value;
}

/** Prepares one limit from its (merged) options. */
export function prepare(options: RouteRateLimitOptions, setting: LimitSetting): RouteLimit {
  const { owner, hook, createStore, logger, releaseOnClose } = setting;
  // The binding checks onLimit and requestWasSuccessful before the limiter takes its namespace.
  const limiter = new HttpRateLimiter<FastifyRequest>(options, fastifyBinding(owner, createStore, logger));
  const { hasLeases, skipFailed, skipSuccessful } = limiter.response;
  // What an admitted request holds until its response ends, for the route hooks: this limit's own slot.
  const held = !releaseOnClose && (hasLeases || skipFailed || skipSuccessful) ? Symbol('rl.result') : undefined;
  const responder = new Responder(limiter, fastifyIO({ onLimit: options.onLimit, requestWasSuccessful: options.requestWasSuccessful, doubleCount: limiter.doubleCount, held }), owner);

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
      result.then((r) => {
        try {
          void responder.respond(request, reply, done, r);
        } catch (error) {
          fail(done, error);
        }
      }, (error: unknown) => fail(done, error));
      return;
    }
    void responder.respond(request, reply, done, result);
  }
  /** The end of an admitted request's response, told once (a sent response's onResponse, then no abort; or an abort). */
  const ended = (request: FastifyRequest, finished: boolean): void => {
    const slots = request as unknown as Record<symbol, Held | undefined>;
    const holding = slots[held!];
    if (holding === undefined) return;
    slots[held!] = undefined;
    responder.ended(request, holding.reply, holding.result, finished);
  };
  const endHooks = held === undefined ? undefined : {
    async onResponse(request: FastifyRequest): Promise<void> {
      ended(request, true);
    },
    async onRequestAbort(request: FastifyRequest): Promise<void> {
      ended(request, false);
    },
  };
  return { limiter, hook, handler: rateLimitHook, endHooks };
}
