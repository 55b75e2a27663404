// The migration hints of the option checks: a peer's option name and what to write in rl instead.

/**
 * Option names of the peers (express-rate-limit, @fastify/rate-limit, rate-limiter-flexible,
 * koa-ratelimit, hono-rate-limiter, @nestjs/throttler) and what to write in rl instead, for the
 * middlewares (`rateLimit()` of every adapter, Nest's module and decorators, and each entry of `limits`). A user moving from a peer passes its names first: the error says the
 * rl equivalent rather than only "no such option". See docs/migrating-from-*.md.
 */
export const HTTP_PEER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  windowMs:
    "express-rate-limit's and hono-rate-limiter's window: use algorithm: fixedWindow({ limit, window }) (window in ms or '15m')",
  max: "a peer's request count: use algorithm: fixedWindow({ limit, window })",
  limit:
    "express-rate-limit's, hono-rate-limiter's and @nestjs/throttler's request count: use algorithm: fixedWindow({ limit, window })",
  timeWindow: "@fastify/rate-limit's window: use algorithm: fixedWindow({ limit, window })",
  duration:
    "a peer's window: use algorithm: fixedWindow({ limit, window }) (rl durations are ms or strings such as '1m'; rate-limiter-flexible's are seconds)",
  points:
    "rate-limiter-flexible's points: use algorithm: fixedWindow({ limit, window }) or tokenBucket({ capacity, refillRate })",
  keyGenerator:
    "a peer's key function: use key, a function of the framework's request (Express and Nest (req), Fastify (request), Koa (ctx), Hono (c)) returning a string",
  id: "koa-ratelimit's key function: use key: (ctx) => string",
  standardHeaders:
    "express-rate-limit's and hono-rate-limiter's header switch: use headers: 'draft-8' (the default), 'draft-7' or 'draft-6'",
  legacyHeaders: "express-rate-limit's X-RateLimit-* switch: use headers: 'legacy' (one format per middleware)",
  enableDraftSpec: "@fastify/rate-limit's draft headers: use headers: 'draft-8' (the default), 'draft-7' or 'draft-6'",
  addHeaders: "@fastify/rate-limit's header names: use headers: 'draft-8', 'draft-7', 'draft-6', 'legacy' or false",
  addHeadersOnExceeding:
    "@fastify/rate-limit's header names: use headers: 'draft-8', 'draft-7', 'draft-6', 'legacy' or false",
  disableHeader: "koa-ratelimit's header switch: use headers: false",
  handler: "express-rate-limit's and hono-rate-limiter's denial handler: use onLimit",
  message: "express-rate-limit's and hono-rate-limiter's denial body: send it from onLimit",
  statusCode:
    'a denial is 429 (503 for a fail-closed store outage); to answer another status, set it in onLimit before sending the body',
  errorResponseBuilder: "@fastify/rate-limit's denial body: use onLimit",
  errorMessage:
    "koa-ratelimit's and @nestjs/throttler's denial body: send it from onLimit (Koa: set ctx.body; Nest: return the body)",
  allowList: "@fastify/rate-limit's allowList: use skip: (request) => boolean",
  whitelist: "koa-ratelimit's whitelist: use skip: (ctx) => boolean",
  ban: "@fastify/rate-limit's ban: use blockDuration (a lockout once a key is denied)",
  skipOnError: "@fastify/rate-limit's skipOnError: use onStoreError: 'allow'",
  passOnStoreError: "express-rate-limit's passOnStoreError: use onStoreError: 'allow'",
  redis: "@fastify/rate-limit's redis: use store: new RedisStore({ client }) from @rl/store-redis",
  db: "koa-ratelimit's db: use store: new RedisStore({ client }) from @rl/store-redis",
  driver: "koa-ratelimit's driver: use store (new MemoryStore() or new RedisStore({ client }))",
  nameSpace: "@fastify/rate-limit's nameSpace: use prefix",
  keyPrefix: "rate-limiter-flexible's keyPrefix: use prefix",
  identifier: "express-rate-limit's identifier: use limits: [{ name, algorithm }]",
  requestPropertyName:
    "express-rate-limit's and hono-rate-limiter's result name: none, the result is always req.rateLimit (Fastify and Nest request.rateLimit, Koa ctx.state.rateLimit, Hono c.get('rateLimit'))",
  validate:
    "express-rate-limit's validations: none needed, rl checks its options when rateLimit() is called and warns once about trust proxy",
  cache: "@fastify/rate-limit's cache size: use store: new MemoryStore({ maxKeys }) (default 1,000,000 keys)",
  groupId:
    "@fastify/rate-limit's groupId: routes share one limit by the same prefix (a route with its own algorithm has its own)",
  onExceeding: "@fastify/rate-limit's onExceeding: use observer (every decision, with its outcome)",
  onExceeded: "@fastify/rate-limit's onExceeded: use observer (every decision, with its outcome)",
  onBanReach:
    "@fastify/rate-limit's onBanReach: none (blockDuration locks a key out once it is denied; an observer hears each denial)",
  continueExceeding:
    "@fastify/rate-limit's continueExceeding: use countDenied: true on a window algorithm (every attempt counts, so a client that keeps sending stays limited) or blockDuration",
  exponentialBackoff:
    "@fastify/rate-limit's exponentialBackoff: none (blockDuration locks a key out for a fixed time once it is denied)",
  blacklist: "koa-ratelimit's blacklist: none, deny those requests in a middleware before rl's",
  throw: "koa-ratelimit's throw: none, the middleware answers the denial itself (onLimit may ctx.throw(429))",
  // @nestjs/throttler (its limit, errorMessage above; its blockDuration is rl's, a lockout once a key is denied).
  ttl: "@nestjs/throttler's window (ms): use algorithm: fixedWindow({ limit, window: ttl }) (rl durations are ms or strings such as '1m')",
  throttlers:
    "@nestjs/throttler's named throttlers: use limits: [{ name, algorithm: fixedWindow({ limit, window }) }] (all of them apply to each request)",
  skipIf: "@nestjs/throttler's skipIf: use skip: (req) => boolean, or @SkipRateLimit() on a controller or route",
  getTracker:
    "@nestjs/throttler's getTracker: use key: (req) => string, or in @rl/nestjs override getTracker(req) in a subclass of RateLimitGuard",
  generateKey:
    "@nestjs/throttler's generateKey: use key: (req) => string (each limit keeps its keys apart; prefix names the namespace)",
  storage:
    "@nestjs/throttler's storage: use store: new RedisStore({ client }) from @rl/store-redis (a memory store by default), or in @rl/nestjs a provider of getStorageToken()",
  ignoreUserAgents:
    "@nestjs/throttler's ignoreUserAgents: use skip: (req) => /bot/i.test(req.headers['user-agent'] ?? '')",
  setHeaders:
    "@nestjs/throttler's setHeaders: use headers: false, or a format ('draft-8', the default, 'draft-7', 'draft-6', 'legacy')",
  // hono-rate-limiter (its other names are express-rate-limit's, above).
  validations:
    "hono-rate-limiter's validations: none needed, rl checks its options when the middleware is created and warns once about proxies",
  binding:
    "hono-rate-limiter's Cloudflare rate-limit binding: use store (new RedisStore({ client }) from @rl/store-redis, or a Store of your own)",
});

/** Option names of rate-limiter-flexible (and the middlewares' peers) and what `createLimiter` takes instead. */
export const LIMITER_PEER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  points:
    "rate-limiter-flexible's points: use algorithm: fixedWindow({ limit: points, window }) or tokenBucket({ capacity: points, refillRate })",
  duration:
    "rate-limiter-flexible's duration (seconds): use algorithm: fixedWindow({ limit, window: duration * 1000 }) (rl durations are ms or strings such as '1m')",
  windowMs: HTTP_PEER_OPTIONS.windowMs!,
  max: HTTP_PEER_OPTIONS.max!,
  limit: 'a request count: use algorithm: fixedWindow({ limit, window })',
  keyPrefix: HTTP_PEER_OPTIONS.keyPrefix!,
  storeClient: "rate-limiter-flexible's storeClient: use store: new RedisStore({ client }) from @rl/store-redis",
  insuranceLimiter:
    "rate-limiter-flexible's insuranceLimiter: use onStoreError: { fallback: { algorithm, store: new MemoryStore() } }",
  execEvenly:
    "rate-limiter-flexible's execEvenly: use limiter.reserve(key, cost, { maxDelay }), or leakyBucket({ capacity, leakRate, mode: 'shape' })",
  execEvenlyMinDelayMs: "rate-limiter-flexible's execEvenly: use limiter.reserve(key, cost, { maxDelay })",
  inMemoryBlockOnConsumed: "rate-limiter-flexible's in-memory block: use denyCache (on by default for remote stores)",
  inMemoryBlockDuration: "rate-limiter-flexible's in-memory block: use denyCache (on by default for remote stores)",
  keyGenerator: 'none: the key is the first argument of consume(key, cost)',
  useRedisPackage:
    "rate-limiter-flexible's useRedisPackage: none, RedisStore tells ioredis, node-redis and iovalkey apart by their methods",
  timeoutMs: "rate-limiter-flexible's timeoutMs: use timeout (50 ms by default for remote stores)",
  rejectIfRedisNotReady:
    "rate-limiter-flexible's rejectIfRedisNotReady: use the client's own option (ioredis enableOfflineQueue: false); onStoreError answers",
  tableName: "rate-limiter-flexible's databases: none, the stores are memory and Redis (or a Store of your own)",
  storeType: "rate-limiter-flexible's databases: none, the stores are memory and Redis (or a Store of your own)",
});

/** What a lockout given among an algorithm's options (as in an @nestjs/throttler throttler) should be instead. */
const LOCKOUT_HINT =
  "@nestjs/throttler's lockout: a lockout is not an algorithm's option, give blockDuration beside algorithm (rateLimit({ algorithm, blockDuration }), createLimiter({ algorithm, store, blockDuration }))";

/**
 * The peers' names for a window algorithm's options (each algorithm of `parseWindowOptions`) and what
 * the algorithm takes instead: `fixedWindow({ windowMs, max })`
 * carries express-rate-limit's names into rl's algorithm.
 */
export const WINDOW_PEER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  windowMs: "express-rate-limit's and hono-rate-limiter's name: use window (ms, or a string such as '15m')",
  max: "express-rate-limit's and koa-ratelimit's count: use limit",
  ttl: "@nestjs/throttler's name: use window (ms, or a string such as '1m')",
  timeWindow: "@fastify/rate-limit's name: use window (ms, or a string such as '1m')",
  duration:
    "a peer's window: use window (ms, or a string such as '1m'; rate-limiter-flexible's duration is seconds: window: duration * 1000)",
  points: "rate-limiter-flexible's points: use limit",
  blockDuration: LOCKOUT_HINT,
  name: "a limit's name is not an algorithm's option: rateLimit({ limits: [{ name, algorithm }] }), createLimiter({ algorithm, store, name })",
});

/** The peers' names for a bucket's options (`tokenBucket`, `leakyBucket`; `rate` is its rate's option name) and what the bucket takes instead. */
export function bucketPeerOptions(rate: string): Readonly<Record<string, string>> {
  return Object.freeze({
    points: `rate-limiter-flexible's points: use capacity (the burst), with ${rate} per interval`,
    max: `a peer's count: use capacity (the burst), with ${rate} per interval`,
    limit: `a window's count: use capacity (the burst), with ${rate} per interval, or fixedWindow({ limit, window })`,
    window: `a bucket has no window: ${rate} units per interval (default '1s'), or fixedWindow({ limit, window })`,
    windowMs: `express-rate-limit's window: a bucket has no window, ${rate} units per interval (default '1s'); or fixedWindow({ limit, window })`,
    duration: `a peer's window: use interval (ms, or a string such as '1m'; rate-limiter-flexible's duration is seconds), with ${rate} per interval`,
    blockDuration: LOCKOUT_HINT,
    ...(rate === 'refillRate'
      ? { leakRate: "leakyBucket's rate: tokenBucket's is refillRate" }
      : { refillRate: "tokenBucket's rate: leakyBucket's is leakRate" }),
  });
}
