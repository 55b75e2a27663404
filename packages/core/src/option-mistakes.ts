// The mistakes users make where rl expects options, a store or an algorithm, recognized by their
// shape, each with the fix: what an `InvalidOptionError` says instead of "an object" and a list of
// another object's internal fields.
import { isAlgorithm } from './algorithm.js';
import { ALGORITHM_FACTORIES } from './algorithms/index.js';
import { InvalidOptionError } from './errors.js';

/** A value as the error shows it, and what to write instead. */
interface Mistake {
  readonly shown: string;
  readonly fix: string;
}

const has = (value: object, ...methods: string[]): boolean =>
  methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function');

/** The name of the `@rl/core` factory `value` is (`fixedWindow`), when it is one given uncalled. */
function factoryName(value: unknown): string | undefined {
  if (typeof value !== 'function') return undefined;
  return Object.entries(ALGORITHM_FACTORIES).find(([, factory]) => factory === value)?.[0];
}

/**
 * What Redis client `value` is (`an ioredis (or iovalkey) client`, `a node-redis client`, `a Valkey GLIDE client`), recognized
 * by its methods, or undefined: for the errors of a client given where a store or a store's options go.
 */
export function redisClientKind(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (has(value, 'defineCommand', 'evalsha')) return 'an ioredis (or iovalkey) client';
  if (has(value, 'sendCommand') && (has(value, 'connect') || 'isOpen' in value)) return 'a node-redis client';
  if (has(value, 'customCommand', 'invokeScript')) return 'a Valkey GLIDE client';
  return undefined;
}

/** True for a `Limiter` (from `createLimiter`), given where its store or its options go. */
const isLimiter = (value: object): boolean => has(value, 'consume', 'peek', 'reset') && 'isConcurrencyLimit' in value;

/**
 * True for a class (`MemoryStore`, `RedisStore`, ioredis's `Redis`) rather than an instance of it: a
 * function whose source says `class`, or whose prototype has the methods its instances would
 * (`charge` of a store, the commands of a Redis client). Compiled classes (`function MemoryStore()`)
 * are known by their prototype alone.
 */
function isClass(value: (...args: never[]) => unknown): boolean {
  const prototype: unknown = value.prototype;
  if (
    prototype !== null &&
    typeof prototype === 'object' &&
    (has(prototype, 'charge') || redisClientKind(prototype) !== undefined)
  )
    return true;
  return /^class\b/.test(Function.prototype.toString.call(value));
}

/** The mistake of a class given as store, uninstantiated: what to write instead, by what its instances are. */
function classMistake(value: (...args: never[]) => unknown, redisStore: string): Mistake {
  const name = value.name || 'anonymous';
  const shown = `the ${name} class, uninstantiated`;
  const prototype: unknown = value.prototype;
  if (prototype !== null && typeof prototype === 'object' && redisClientKind(prototype) !== undefined) {
    return {
      shown,
      fix: `a store, with a client in it: store: new RedisStore({ client: new ${name}(…) }) from @rl/store-redis`,
    };
  }
  if (name === 'RedisStore') return { shown, fix: `an instance: pass ${redisStore}` };
  return {
    shown,
    fix: `an instance: pass new ${name}(${name === 'MemoryStore' ? '' : '…'}) (store takes a store object, not its class)`,
  };
}

/** What a Redis client or another library's object given as `store` is, and the fix; undefined for anything else. */
function storeMistake(value: unknown): Mistake | undefined {
  const redisStore =
    'store: new RedisStore({ client }) from @rl/store-redis (npm install @rl/store-redis), with the client itself';
  if (typeof value === 'function' && isClass(value as (...args: never[]) => unknown))
    return classMistake(value as (...args: never[]) => unknown, redisStore);
  if (typeof value === 'function') {
    return {
      shown: 'a function (rate-limit-redis takes sendCommand; rl does not)',
      fix: `a store object: ${redisStore}, or new MemoryStore()`,
    };
  }
  if (value === null || typeof value !== 'object') return undefined;
  const client = redisClientKind(value);
  if (client !== undefined) return { shown: client, fix: `a store: pass ${redisStore}` };
  if (has(value, 'increment', 'resetKey')) {
    return {
      shown: "an express-rate-limit store (rate-limit-redis's RedisStore, or another)",
      fix: `an rl store, which takes the Redis client rather than sendCommand: ${redisStore}`,
    };
  }
  if (has(value, 'consume', 'penalty', 'reward'))
    return {
      shown: 'a rate-limiter-flexible limiter',
      fix: `an rl store (the limiter's algorithm goes in algorithm): ${redisStore}, or new MemoryStore()`,
    };
  if (isLimiter(value))
    return {
      shown: 'a Limiter (from createLimiter)',
      fix: 'the store that limiter was created with (new MemoryStore(), new RedisStore({ client }))',
    };
  return undefined;
}

/** Throws the {@link InvalidOptionError} of a known mistake given as the store `field`; returns when `value` is none. */
export function refuseStoreMistake(value: unknown, field: string): void {
  const mistake = storeMistake(value);
  if (mistake !== undefined) throw new InvalidOptionError(field, value, mistake.fix, { shown: mistake.shown });
}

/**
 * Throws the {@link InvalidOptionError} of a known mistake given where `owner` (`rateLimit`,
 * `createLimiter`) takes its options object: an algorithm alone, a factory uncalled, a limiter, a
 * Redis client. Returns when `options` is none of them.
 */
export function refuseOptionsMistake(options: unknown, owner: string): void {
  const example = '{ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }';
  if (isAlgorithm(options)) {
    throw new InvalidOptionError(
      owner,
      options,
      `an options object: wrap the algorithm, ${owner}({ algorithm }), for example ${owner}(${example})`,
      { shown: `a ${options.kind} algorithm` },
    );
  }
  const factory = factoryName(options);
  if (factory !== undefined) {
    throw new InvalidOptionError(
      owner,
      options,
      `an options object with the algorithm called: ${owner}({ algorithm: ${factory}({ … }) })`,
      { shown: `the ${factory} factory` },
    );
  }
  if (options !== null && typeof options === 'object' && isLimiter(options)) {
    throw new InvalidOptionError(
      owner,
      options,
      `the options of a limit, not a limiter: ${owner}(${example}) (the same algorithm, store and prefix the limiter was created with)`,
      { shown: 'a Limiter (from createLimiter)' },
    );
  }
  if (Array.isArray(options) && options.length > 0 && options.every(isThrottler)) {
    throw new InvalidOptionError(owner, options, `an options object: ${owner}(${throttlersAsOptions(options)})`, {
      shown: 'an array of @nestjs/throttler throttlers ([{ ttl, limit }])',
    });
  }
  const store = storeMistake(options);
  if (store !== undefined && typeof options === 'object') {
    throw new InvalidOptionError(
      owner,
      options,
      `an options object, the client in a store: ${owner}({ algorithm, store: new RedisStore({ client }) })`,
      { shown: store.shown },
    );
  }
}

/** True for an @nestjs/throttler throttler (`{ ttl, limit }`, maybe `name`, `blockDuration`, …): an object with a `ttl` and a `limit`. */
function isThrottler(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && 'ttl' in value && 'limit' in value;
}

/** A throttler's value as rl's option takes it: a number or a string as written, anything else (a function of the context) as `…`. */
const shownValue = (value: unknown): string =>
  typeof value === 'number' || typeof value === 'string' ? JSON.stringify(value).replaceAll('"', "'") : '…';

/**
 * The rl options of @nestjs/throttler's `forRoot([...])` throttlers, written out with their values:
 * one unnamed throttler is `{ algorithm: fixedWindow({ limit, window: ttl }) }` (a throttler's ttl is
 * ms, as rl's window), several are `limits` (each applies to every request, as throttler's do).
 */
function throttlersAsOptions(throttlers: readonly Record<string, unknown>[]): string {
  const algorithm = (t: Record<string, unknown>): string =>
    `fixedWindow({ limit: ${shownValue(t.limit)}, window: ${shownValue(t.ttl)} })`;
  const blocks = throttlers.find((t) => t.blockDuration !== undefined)?.blockDuration;
  const lockout = blocks === undefined ? '' : `, blockDuration: ${shownValue(blocks)}`;
  if (throttlers.length === 1 && throttlers[0]!.name === undefined)
    return `{ algorithm: ${algorithm(throttlers[0]!)}${lockout} }`;
  const limits = throttlers.map(
    (t, i) => `{ name: ${shownValue(t.name ?? (i === 0 ? 'default' : `limit-${i}`))}, algorithm: ${algorithm(t)} }`,
  );
  return `{ limits: [${limits.join(', ')}]${lockout} }`;
}

/** Throws the {@link InvalidOptionError} of an algorithm factory given uncalled as `field` (`algorithm: fixedWindow`); returns otherwise. */
export function refuseUncalledFactory(value: unknown, field: string): void {
  const factory = factoryName(value);
  if (factory !== undefined) {
    throw new InvalidOptionError(
      field,
      value,
      `an algorithm: call the factory, ${factory}({ … }) (a function as algorithm chooses one per request)`,
      { shown: `the ${factory} factory, uncalled` },
    );
  }
}
