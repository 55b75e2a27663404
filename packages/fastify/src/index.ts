import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { MemoryStore } from '@rl/store-memory';
import {
  InvalidOptionError,
  type HttpRateLimitOptions,
  type RateLimitResult,
  type Store,
} from '@rl/core';
import {
  HttpRateLimiter,
  checkOptionNames,
  PROBLEM_CONTENT_TYPE,
  Responder,
  checkAdapterFunctions,
  forwardableError,
  problemBody,
  resolvesForgedClient,
  type FrameworkBinding,
  type HeaderAccess,
  type OutageLogger,
  type ResponseIO,
} from '@rl/core/http';

export type { RateLimitResult, HttpRateLimitOptions, LimitOptions, HeaderFormat } from '@rl/core';

/**
 * Sends the response for a denied request. Status (429, or 503 for a fail-closed store outage),
 * Retry-After and the RateLimit headers are already set. Send with `reply.send()`, or return the
 * payload; when it does neither, the default problem+json body is sent.
 */
export type OnLimitHandler = (request: FastifyRequest, reply: FastifyReply, result: RateLimitResult) => unknown;

/** Options of one route (`config: { rateLimit }`), merged over the plugin's options. */
export interface RouteRateLimitOptions extends Partial<HttpRateLimitOptions<FastifyRequest>> {
  /** Replaces the default denial body. */
  onLimit?: OnLimitHandler;
  /** The hook the limit runs in: `'onRequest'` (default: before the body is parsed) or `'preHandler'` (after parsing and validation, for a key or cost that reads the body or an authenticated user). */
  hook?: 'onRequest' | 'preHandler';
  /**
   * With `skipFailedRequests` or `skipSuccessfulRequests`: whether a sent response counts as a
   * success (sync or async). Default: `reply.statusCode < 400`.
   */
  requestWasSuccessful?: (request: FastifyRequest, reply: FastifyReply) => boolean | Promise<boolean>;
}

/** Options of the plugin: the shared options of every adapter, plus `global`, `hook` and `onLimit`. */
export interface RateLimitPluginOptions extends RouteRateLimitOptions {
  /** Apply the limit to every route (default true). With false, only routes with `config.rateLimit` are limited. */
  global?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The outcome of the rate limit for this request; null when the route is not limited or the request was skipped. */
    rateLimit: RateLimitResult | null;
  }
  interface FastifyInstance {
    /**
     * The plugin's limit as a hook, for what the plugin does not limit by itself: requests that end in
     * 404 (`app.setNotFoundHandler({ preHandler: app.rateLimit() }, handler)`: scanners probing
     * unknown paths), or a route of `global: false`. With options, they are merged over the plugin's
     * (as a route's `config.rateLimit`). Its permits are released when the response closes. Do not add
     * it to a route the plugin already limits: that counts the request twice (`RL_DOUBLE_COUNT`).
     */
    rateLimit(options?: RouteRateLimitOptions): RateLimitHook;
  }
  interface FastifyContextConfig {
    /** This route's limit: options merged over the plugin's, or false for no limit. */
    rateLimit?: RouteRateLimitOptions | false;
  }
}

const ADAPTER_OPTIONS = ['onLimit', 'hook', 'requestWasSuccessful'];
/** Options that, when a route sets any of them, give the route its own state instead of sharing the plugin's. */
const STATE_OPTIONS = ['algorithm', 'limits', 'prefix', 'store'] as const;

// No `claim`: `record` tells the header writer whether an rl limit wrote on this reply before (see fastifyIO).
const replyHeaders: HeaderAccess<FastifyReply> = {
  get: (reply, name) => reply.getHeader(name),
  set: (reply, name, value) => {
    reply.header(name, value);
  },
};

function binding(owner: string, createStore: () => Store, logger: OutageLogger): FrameworkBinding<FastifyRequest> {
  return {
    owner,
    logger,
    adapterOptions: ADAPTER_OPTIONS,
    clientIp: (request) => request.ip,
    requestHeaders: (request) => request.headers,
    // Fastify does not expose its trustProxy setting: when the resolved IP is another than the socket
    // peer, or the chain it resolved has more than the peer (a forwarded client whose address is the
    // proxy's own), the forwarding header was trusted.
    trustsProxy: (request) => request.ip !== request.raw.socket?.remoteAddress || (request.ips?.length ?? 0) > 1,
    // Not a hop count: for `trustProxy: <number>` Fastify 5 trusts no forwarding header (it cannot check the peer).
    trustProxyAdvice: "Create the server with Fastify({ trustProxy }) set to the proxies' addresses or CIDRs (for example '10.0.0.0/8') or a function (address, hop) => boolean (a number of proxies trusts nothing in Fastify 5)",
    // Nor in initialConfig: ask for the `ip` of a forged request (a copy of `request` with another `raw`).
    trustsAllProxies: (request) => resolvesForgedClient((raw) => (Object.create(request, { raw: { value: raw } }) as FastifyRequest).ip),
    trustAllProxiesAdvice: "Create the server with Fastify({ trustProxy }) set to the proxies' addresses or CIDRs (for example '10.0.0.0/8') instead of true",
    createStore,
    checkAdapterOptions: checkAdapterFunctions(owner, 'a function (request, reply, result) that sends the denial response', '(request, reply)'),
  };
}

/** The hook a limit runs in. */
type Hook = 'onRequest' | 'preHandler';

/** A limit as a Fastify hook (`onRequest` or `preHandler`), from `fastify.rateLimit()`. */
export type RateLimitHook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

/** A prepared limit of one route (or of every route that inherits the plugin's options). */
interface RouteLimit {
  readonly limiter: HttpRateLimiter<FastifyRequest>;
  readonly hook: Hook;
  readonly handler: (request: FastifyRequest, reply: FastifyReply, done: HookDone) => void;
  readonly release: (request: FastifyRequest) => Promise<void>;
  /** True when the limit releases its permits and reports its outcome itself, on the Node response's `'close'` (no route hooks needed). */
  readonly releaseOnClose: boolean;
  /** With counting by outcome: the `onResponse` and `onRequestAbort` hooks that report it; undefined otherwise (or with `releaseOnClose`). */
  readonly outcome: { readonly responded: (request: FastifyRequest, reply: FastifyReply) => Promise<void>; readonly aborted: (request: FastifyRequest) => Promise<void> } | undefined;
}

/** The `hook` option, checked once where it is given (plugin or route options). */
function parseHook(value: unknown, owner: string): Hook {
  if (value === undefined) return 'onRequest';
  if (value !== 'onRequest' && value !== 'preHandler') throw new InvalidOptionError(`${owner}.hook`, value, "'onRequest' or 'preHandler'");
  return value;
}

/**
 * Prepares one limit. `releaseOnClose`: the limit releases its permits and reports its outcome on the
 * Node response's `'close'` (a limit that runs on routes without hooks of its own: a route declared
 * before the plugin loaded, or `fastify.rateLimit()`); otherwise the route's `onResponse` and
 * `onRequestAbort` hooks do (see {@link RouteLimit.release} and {@link RouteLimit.outcome}).
 */
function prepare(options: RouteRateLimitOptions, owner: string, hook: Hook, createStore: () => Store, logger: OutageLogger, releaseOnClose = false): RouteLimit {
  // The binding checks onLimit and requestWasSuccessful before the limiter takes its namespace.
  const limiter = new HttpRateLimiter<FastifyRequest>(options, binding(owner, createStore, logger));
  const { onLimit, requestWasSuccessful: wasSuccessful } = options;
  // This limit's own result on each request: `request.rateLimit` is the last limit's when several apply.
  const slot = Symbol('rl.result');
  const resultOf = (request: FastifyRequest): RateLimitResult | undefined => (request as unknown as Record<symbol, RateLimitResult | undefined>)[slot];
  const responder = new Responder(limiter, fastifyIO(onLimit, slot, wasSuccessful, limiter, releaseOnClose), owner);

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
  async function releasePermit(request: FastifyRequest): Promise<void> {
    await resultOf(request)?.release();
  }
  const outcome = !responder.countsOutcome || releaseOnClose ? undefined : {
    async responded(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const result = resultOf(request);
      if (result !== undefined) responder.finished(request, reply, result);
    },
    async aborted(request: FastifyRequest): Promise<void> {
      const result = resultOf(request);
      if (result !== undefined) responder.unfinished(result);
    },
  };
  return { limiter, hook, handler: rateLimitHook, release: releasePermit, outcome, releaseOnClose };
}

/** The `done` callback of a Fastify hook. */
type HookDone = (error?: Error) => void;

/** Ends a hook with what a user function threw, as an error Fastify cannot take for success (see `forwardableError`). */
function fail(done: HookDone, error: unknown): void {
  done(forwardableError(error) as Error);
}

/** Fastify's side of the shared decision tree (see `Responder`); permits are released by the route's hooks. */
function fastifyIO(
  onLimit: OnLimitHandler | undefined,
  slot: symbol,
  requestWasSuccessful: RouteRateLimitOptions['requestWasSuccessful'],
  limiter: HttpRateLimiter<FastifyRequest>,
  releaseOnClose: boolean,
): ResponseIO<FastifyRequest, FastifyReply, HookDone, void> {
  const doubleCount = limiter.doubleCount;
  // The onResponse / onRequestAbort hooks (permits, counting by outcome) find the limit's result in `slot`.
  const keepsResult = !releaseOnClose && (limiter.hasLeases || limiter.skipFailed || limiter.skipSuccessful);
  return {
    headers: replyHeaders,
    releaseOnClose,
    nodeResponse: (reply) => reply.raw,
    statusCode: (_request, reply) => reply.statusCode,
    requestWasSuccessful,
    // `request.rateLimit` is decorated (null on every request) and every rl limit that runs sets it:
    // null means no rl limit wrote headers on this reply yet, so the first one sets them without reading
    // them back, and nothing is added to the reply. An earlier result (a plugin of a parent context)
    // goes to the double-count check. The limit's own slot is written only when a hook reads it back.
    record: (request, _reply, result) => {
      const earlier = request.rateLimit;
      request.rateLimit = result;
      if (keepsResult) (request as unknown as Record<symbol, RateLimitResult>)[slot] = result;
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
    onLimit: onLimit === undefined ? undefined : (request, reply, done, result) => {
      sendOnLimit(onLimit, request, reply, result).catch((error: unknown) => fail(done, error));
    },
    // The client is gone: nothing to send, and the handler must not run.
    drop: (_request, reply, done, givenBack) => {
      givenBack.then(() => reply.hijack()).catch(done);
    },
  };
}

/** Sends the denial through `onLimit`: its own reply, the payload it returns, or the default body. */
async function sendOnLimit(onLimit: OnLimitHandler, request: FastifyRequest, reply: FastifyReply, result: RateLimitResult): Promise<void> {
  const payload = await onLimit(request, reply, result);
  if (reply.sent) return;
  // Not awaited: a reply is a thenable that settles only when the response has been sent.
  if (payload !== undefined) void reply.send(payload);
  else void reply.type(PROBLEM_CONTENT_TYPE).send(problemBody(result));
}

function addHook(route: RouteOptions, name: 'onRequest' | 'preHandler' | 'onResponse' | 'onRequestAbort', hook: unknown, first: boolean): void {
  const existing = route[name] as unknown;
  const list = existing === undefined || existing === null ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<string, unknown>)[name] = first ? [hook, ...list] : [...list, hook];
}

/** The limit of a route from its `config.rateLimit` (see `limitOf` in the plugin). */
type LimitOf = (config: unknown, owner: string, releaseOnClose: boolean) => RouteLimit | null;

/**
 * Whether the instance's router has routes yet. find-my-way prints `(empty tree)` for a router
 * without routes; any other text (a future format too) counts as routes: the side that limits them.
 */
function routesDeclared(fastify: FastifyInstance): boolean {
  return fastify.printRoutes() !== '(empty tree)';
}

/**
 * Limits the routes of the context that were declared before the plugin loaded (their config lacks
 * `seen`, the mark onRoute gives), with instance hooks: the route's limit runs in the hook it asks
 * for, its permits released on the response's `'close'`.
 */
function limitRoutesDeclaredBefore(fastify: FastifyInstance, seen: symbol, limitOf: LimitOf): void {
  const pending = Symbol('rl.pending');
  fastify.decorateRequest(pending, null);
  const unseenLimit = (request: FastifyRequest): RouteLimit | null => {
    const config = request.routeOptions.config as Record<string | symbol, unknown> & { url?: string; method?: string; rateLimit?: unknown };
    if (config[seen] === true || config.url === undefined) return null;
    return limitOf(config.rateLimit, `${String(config.method)} ${config.url} config.rateLimit`, true);
  };
  fastify.addHook('onRequest', function rateLimitRouteDeclaredBefore(request, reply, done) {
    let limit: RouteLimit | null;
    try {
      limit = unseenLimit(request);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (limit === null) return done();
    if (limit.hook === 'onRequest') return limit.handler(request, reply, done);
    (request as unknown as Record<symbol, RouteLimit | null>)[pending] = limit;
    done();
  });
  fastify.addHook('preHandler', function rateLimitRouteDeclaredBeforeInPreHandler(request, reply, done) {
    const limit = (request as unknown as Record<symbol, RouteLimit | null>)[pending];
    if (limit === null || limit === undefined) return done();
    limit.handler(request, reply, done);
  });
}

async function rateLimitPlugin(fastify: FastifyInstance, options: RateLimitPluginOptions): Promise<void> {
  checkOptionNames(options, 'rateLimit', [...ADAPTER_OPTIONS, 'global']);
  const { global = true, ...shared } = options;
  if (typeof global !== 'boolean') throw new InvalidOptionError('rateLimit.global', global, 'true (every route) or false (only routes with config.rateLimit)');
  const pluginHook = parseHook(shared.hook, 'rateLimit');
  let ownedStore: Store | undefined;
  const createStore = (): Store => (ownedStore ??= new MemoryStore());
  // `undefined` alone means "not given": a null store is rejected here, also when no route is limited yet (global: false).
  if (shared.store === null) throw new InvalidOptionError('rateLimit.store', null, 'a store such as new MemoryStore() (leave the option out for the default)');
  const store = shared.store === undefined ? createStore() : shared.store;
  const base: RouteRateLimitOptions = { ...shared, store };
  // Store outages are logged once per outage on the instance's logger (see OutageLog).
  const logger: OutageLogger = {
    warn: (details, message) => fastify.log.warn(details, message),
    info: (details, message) => fastify.log.info(details, message),
  };
  const globalLimit = global ? prepare(base, 'rateLimit', pluginHook, createStore, logger) : undefined;
  // The plugin's own limit without route hooks (for the not-found handler, fastify.rateLimit(), a route the plugin never saw): the same state.
  let globalOnClose: RouteLimit | undefined;
  const pluginLimitOnClose = (): RouteLimit => (globalOnClose ??= prepare({ ...base, prefix: globalLimit!.limiter.prefix }, 'rateLimit', pluginHook, createStore, logger, true));

  /**
   * The limit of a route from its `config.rateLimit` (`undefined`: the plugin's; `false`: none), or
   * null. Throws an InvalidOptionError naming `owner` for bad route options. One limit per route
   * options object: the HEAD route Fastify adds for a GET shares the GET's limit.
   */
  const routeLimits = new WeakMap<object, RouteLimit>();
  const routeLimitsOnClose = new WeakMap<object, RouteLimit>();
  function limitOf(config: unknown, owner: string, releaseOnClose: boolean): RouteLimit | null {
    if (config === false || (config === undefined && globalLimit === undefined)) return null;
    if (config === undefined) return releaseOnClose ? pluginLimitOnClose() : globalLimit!;
    if (config === null || typeof config !== 'object') throw new InvalidOptionError(owner, config, 'route options merged over the plugin options, or false');
    const cache = releaseOnClose ? routeLimitsOnClose : routeLimits;
    const known = cache.get(config);
    if (known !== undefined) return known;
    const route = config as RouteRateLimitOptions;
    const merged: Record<string, unknown> = { ...base, ...route };
    if (route.limits !== undefined) delete merged.algorithm;
    if (route.algorithm !== undefined) delete merged.limits;
    // A route that only changes the cost, key, headers, ... spends the plugin's limit, not a limit of its own.
    const ownState = STATE_OPTIONS.some((name) => route[name] !== undefined);
    if (globalLimit !== undefined && !ownState) merged.prefix = globalLimit.limiter.prefix;
    // The same route limit prepared twice (hooks, then on close) shares its state: one namespace.
    else if (ownState && merged.prefix === undefined && cache !== routeLimits && routeLimits.has(config)) merged.prefix = routeLimits.get(config)!.limiter.prefix;
    const hook = route.hook === undefined ? pluginHook : parseHook(route.hook, owner);
    const limit = prepare(merged as RouteRateLimitOptions, owner, hook, createStore, logger, releaseOnClose);
    cache.set(config, limit);
    return limit;
  }

  // Registered again in a child context (a stricter limit for some routes), the decorator exists already.
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
  // Routes declared once the plugin has loaded: their hooks are added here, and the route is marked as seen.
  const seen = Symbol('rl.seen');
  fastify.addHook('onRoute', (route) => {
    route.config = { ...route.config, [seen]: true } as typeof route.config;
    const limit = limitOf(route.config?.rateLimit, `${route.method} ${route.url} config.rateLimit`, false);
    if (limit === null) return;
    addHook(route, limit.hook, limit.handler, true);
    if (limit.limiter.hasLeases) {
      addHook(route, 'onResponse', limit.release, false);
      addHook(route, 'onRequestAbort', limit.release, false);
    }
    if (limit.outcome !== undefined) {
      addHook(route, 'onResponse', limit.outcome.responded, false);
      addHook(route, 'onRequestAbort', limit.outcome.aborted, false);
    }
  });

  // Routes declared before the plugin loaded (`app.register(rateLimit, …)` without `await`, then
  // `app.get(…)`; or routes declared before the register call) never reached onRoute. Instance hooks
  // apply to every route of the context whenever it was declared: they limit those routes, with the
  // limit prepared at their first request (bad route options then answer 500 through the error
  // handler). Requests that end in 404 are left alone: see `fastify.rateLimit()`. Without such
  // routes the hooks are not installed: each request would pay two hook calls and a
  // `request.routeOptions` read for nothing.
  if (routesDeclared(fastify)) limitRoutesDeclaredBefore(fastify, seen, limitOf);

  // With global: false, `fastify.rateLimit()` is the plugin's options alone, one limit however often it is called.
  const pluginOptionsOnly: RouteRateLimitOptions = {};
  // `fastify.rateLimit(options?)`: the plugin's limit (or route options merged over the plugin's) as a
  // hook, for the not-found handler or a route of `global: false`. The first registration decorates.
  if (!fastify.hasDecorator('rateLimit')) {
    fastify.decorate('rateLimit', function rateLimitHook(routeOptions?: RouteRateLimitOptions): RateLimitHook {
      const limit = routeOptions === undefined && globalLimit === undefined
        ? limitOf(pluginOptionsOnly, 'fastify.rateLimit()', true)
        : limitOf(routeOptions, 'fastify.rateLimit(options)', true);
      if (limit === null) throw new InvalidOptionError('fastify.rateLimit(options)', routeOptions, 'route options merged over the plugin options');
      return limit.handler;
    });
  }
  fastify.addHook('onClose', async () => {
    await ownedStore?.close?.();
  });
}

/**
 * Rate-limit plugin for Fastify 5 (a fastify-plugin, so it applies to the routes of the instance it
 * is registered on): `app.register(rateLimit, { algorithm: fixedWindow({ limit: 100, window: '1m' }) })`,
 * with or without `await` (routes declared before the plugin loaded are limited too), then per route
 * `{ config: { rateLimit: { cost: 5 } } }` (merged over the plugin's options) or
 * `{ config: { rateLimit: false } }`. A route that sets `limits`, `algorithm`, `prefix` or `store` has
 * only its own limits: they replace the plugin's (as in @fastify/rate-limit). Requests that end in 404
 * are not limited, unless the not-found handler asks: `app.setNotFoundHandler({ preHandler: app.rateLimit() }, …)`.
 *
 * Options are validated at registration (plugin options) and at route declaration (route options; for
 * a route declared before the plugin loaded, at its first request, answered 500 when bad), throwing an
 * InvalidOptionError naming the field. `request.rateLimit` holds the outcome. A denied
 * request gets 429 (503 when a fail-closed store failed) with Retry-After and a problem+json body (or
 * `onLimit`); a key or cost function that throws goes to Fastify's error handler (500) and charges
 * nothing; a shaped request is held, and one whose client leaves is dropped before the handler; a
 * concurrency permit is released once, on `onResponse` or `onRequestAbort` (on the response's
 * `'close'` for a route declared before the plugin loaded, or `app.rateLimit()`). A memory store the
 * plugin created is closed on `onClose`.
 */
export const rateLimit = fp(rateLimitPlugin, { fastify: '5.x', name: '@rl/fastify' });
export default rateLimit;
