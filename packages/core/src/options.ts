import { InvalidOptionError } from './errors.js';
import { parseDuration } from './duration.js';

/**
 * Option names of the peers (express-rate-limit, @fastify/rate-limit, rate-limiter-flexible,
 * koa-ratelimit) and what to write in rl instead, for the middlewares (`rateLimit()` of every adapter,
 * and each entry of `limits`). A user moving from a peer passes its names first: the error says the
 * rl equivalent rather than only "no such option". See docs/migrating-from-*.md.
 */
export const HTTP_PEER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  windowMs: "express-rate-limit's window: use algorithm: fixedWindow({ limit, window }) (window in ms or '15m')",
  max: "a peer's request count: use algorithm: fixedWindow({ limit, window })",
  limit: "express-rate-limit's request count: use algorithm: fixedWindow({ limit, window })",
  timeWindow: "@fastify/rate-limit's window: use algorithm: fixedWindow({ limit, window })",
  duration: "a peer's window: use algorithm: fixedWindow({ limit, window }) (rl durations are ms or strings such as '1m'; rate-limiter-flexible's are seconds)",
  points: "rate-limiter-flexible's points: use algorithm: fixedWindow({ limit, window }) or tokenBucket({ capacity, refillRate })",
  keyGenerator: 'a peer\'s key function: use key: (req) => string',
  id: "koa-ratelimit's key function: use key: (ctx) => string",
  standardHeaders: "express-rate-limit's header switch: use headers: 'draft-8' (the default), 'draft-7' or 'draft-6'",
  legacyHeaders: "express-rate-limit's X-RateLimit-* switch: use headers: 'legacy' (one format per middleware)",
  enableDraftSpec: "@fastify/rate-limit's draft headers: use headers: 'draft-8' (the default), 'draft-7' or 'draft-6'",
  addHeaders: "@fastify/rate-limit's header names: use headers: 'draft-8', 'draft-7', 'draft-6', 'legacy' or false",
  addHeadersOnExceeding: "@fastify/rate-limit's header names: use headers: 'draft-8', 'draft-7', 'draft-6', 'legacy' or false",
  disableHeader: "koa-ratelimit's header switch: use headers: false",
  handler: "express-rate-limit's denial handler: use onLimit",
  message: "express-rate-limit's denial body: send it from onLimit",
  statusCode: 'a denial is always 429 (503 for a fail-closed store outage); onLimit sends its body',
  errorResponseBuilder: "@fastify/rate-limit's denial body: use onLimit",
  errorMessage: "koa-ratelimit's denial body: set ctx.body in onLimit",
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
  requestPropertyName: 'none: the result is always req.rateLimit (Fastify request.rateLimit, Koa ctx.state.rateLimit)',
  validate: "express-rate-limit's validations: none needed, rl checks its options when rateLimit() is called and warns once about trust proxy",
  cache: "@fastify/rate-limit's cache size: use store: new MemoryStore({ maxKeys }) (default 1,000,000 keys)",
  groupId: "@fastify/rate-limit's groupId: routes share one limit by the same prefix (a route with its own algorithm has its own)",
  onExceeding: "@fastify/rate-limit's onExceeding: use observer (every decision, with its outcome)",
  onExceeded: "@fastify/rate-limit's onExceeded: use observer (every decision, with its outcome)",
  onBanReach: "@fastify/rate-limit's onBanReach: none (blockDuration locks a key out once it is denied; an observer hears each denial)",
  continueExceeding: "@fastify/rate-limit's continueExceeding: use countDenied: true on a window algorithm (every attempt counts, so a client that keeps sending stays limited) or blockDuration",
  exponentialBackoff: "@fastify/rate-limit's exponentialBackoff: none (blockDuration locks a key out for a fixed time once it is denied)",
  blacklist: "koa-ratelimit's blacklist: none, deny those requests in a middleware before rl's",
  throw: "koa-ratelimit's throw: none, the middleware answers the denial itself (onLimit may ctx.throw(429))",
});

/** Option names of rate-limiter-flexible (and the middlewares' peers) and what `createLimiter` takes instead. */
export const LIMITER_PEER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  points: "rate-limiter-flexible's points: use algorithm: fixedWindow({ limit: points, window }) or tokenBucket({ capacity: points, refillRate })",
  duration: "rate-limiter-flexible's duration (seconds): use algorithm: fixedWindow({ limit, window: duration * 1000 }) (rl durations are ms or strings such as '1m')",
  windowMs: HTTP_PEER_OPTIONS.windowMs!,
  max: HTTP_PEER_OPTIONS.max!,
  limit: "a request count: use algorithm: fixedWindow({ limit, window })",
  keyPrefix: HTTP_PEER_OPTIONS.keyPrefix!,
  storeClient: "rate-limiter-flexible's storeClient: use store: new RedisStore({ client }) from @rl/store-redis",
  insuranceLimiter: "rate-limiter-flexible's insuranceLimiter: use onStoreError: { fallback: { algorithm, store: new MemoryStore() } }",
  execEvenly: "rate-limiter-flexible's execEvenly: use limiter.reserve(key, cost, { maxDelay }), or leakyBucket({ capacity, leakRate, mode: 'shape' })",
  execEvenlyMinDelayMs: "rate-limiter-flexible's execEvenly: use limiter.reserve(key, cost, { maxDelay })",
  inMemoryBlockOnConsumed: "rate-limiter-flexible's in-memory block: use denyCache (on by default for remote stores)",
  inMemoryBlockDuration: "rate-limiter-flexible's in-memory block: use denyCache (on by default for remote stores)",
  keyGenerator: 'none: the key is the first argument of consume(key, cost)',
  useRedisPackage: "rate-limiter-flexible's useRedisPackage: none, RedisStore tells ioredis, node-redis and iovalkey apart by their methods",
  timeoutMs: "rate-limiter-flexible's timeoutMs: use timeout (50 ms by default for remote stores)",
  rejectIfRedisNotReady: "rate-limiter-flexible's rejectIfRedisNotReady: use the client's own option (ioredis enableOfflineQueue: false); onStoreError answers",
  tableName: "rate-limiter-flexible's databases: none, the stores are memory and Redis (or a Store of your own)",
  storeType: "rate-limiter-flexible's databases: none, the stores are memory and Redis (or a Store of your own)",
});

/**
 * Throws when `options` is not a plain object or has keys outside `allowed` (unknown options are
 * errors, never ignored). Every unknown key is reported in one {@link InvalidOptionError} (its
 * `fields` lists them, `field` is the first); a key found in `peerHints` (a peer's option name) is
 * named with its rl equivalent.
 */
export function checkOptions(
  options: unknown,
  allowed: readonly string[],
  owner: string,
  peerHints: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(owner, options, 'an options object');
  }
  const unknown = Object.keys(options).filter((name) => !allowed.includes(name));
  if (unknown.length === 0) return options as Record<string, unknown>;
  // Own properties only: a name such as `constructor` or `toString` is no hint.
  const hint = (name: string): string | undefined => (Object.hasOwn(peerHints, name) ? peerHints[name] : undefined);
  const takes = `${owner} takes ${allowed.join(', ')}`;
  const first = unknown[0]!;
  if (unknown.length === 1) {
    const h = hint(first);
    throw new InvalidOptionError(`${owner}.${first}`, (options as Record<string, unknown>)[first], `no such option${h ? ` (${h})` : ''}; ${takes}`);
  }
  const each = unknown.map((name) => {
    const h = hint(name);
    return h ? `${name} (${h})` : name;
  });
  throw new InvalidOptionError(
    `${owner}.${first}`,
    (options as Record<string, unknown>)[first],
    `no such options: ${each.join('; ')}; ${takes}`,
    unknown.map((name) => `${owner}.${name}`),
  );
}

/** A finite number greater than 0. */
export function positiveNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidOptionError(field, value, 'a finite number greater than 0');
  }
  return value;
}

/** An integer of at least `min` (1 by default). */
export function integerAtLeast(value: unknown, field: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new InvalidOptionError(field, value, `an integer of at least ${min}`);
  }
  return value;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** True when `text` has only printable ASCII characters (space to `~`; the empty string has none other). */
export function isPrintableAscii(text: string): boolean {
  return PRINTABLE_ASCII.test(text);
}

/** A boolean option: `fallback` when not given (undefined); anything but a boolean, null included, is refused. */
export function optionalBoolean(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidOptionError(field, value, 'true or false');
  return value;
}

/**
 * The largest count an option takes (a limit, a capacity, a rate per interval): 15 digits, the most a
 * structured-field integer may have, so a quota and a remaining count are written in the RateLimit
 * headers as they are.
 */
export const MAX_COUNT = 999_999_999_999_999;

/**
 * The longest window, interval or lease, and the longest time a bucket may take to recover, in
 * milliseconds (about 31,000 years): far beyond any policy, yet a clock reading plus this span is
 * still an exact integer, and its whole seconds are written in a header as they are.
 */
export const MAX_SPAN_MS = 999_999_999_999_999;

/** An integer from 1 to {@link MAX_COUNT}: a limit or a capacity. */
export function countOption(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_COUNT) {
    throw new InvalidOptionError(field, value, `an integer from 1 to ${MAX_COUNT} (a RateLimit header's integer has at most 15 digits)`);
  }
  return value;
}

/**
 * A duration from 1 ms to {@link MAX_SPAN_MS} (a window, an interval, a lease): a shorter one makes
 * the per-millisecond arithmetic of the algorithms overflow, a longer one has no exact end time.
 */
export function spanOption(value: unknown, field: string): number {
  const ms = parseDuration(value, field);
  if (ms < 1 || ms > MAX_SPAN_MS) throw new InvalidOptionError(field, value, `a duration from 1ms to ${MAX_SPAN_MS}ms (about 31,000 years)`);
  return ms;
}
