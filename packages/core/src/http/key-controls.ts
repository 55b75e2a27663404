import type { Algorithm } from '../algorithm.js';
import type { Duration } from '../duration.js';
import { InvalidOptionError, UnsupportedError } from '../errors.js';
import { coreOf } from '../limiter/core-registry.js';
import type { BlockOptions, Limiter, OverrideOptions } from '../limiter/index.js';
import type { StoredOverride } from '../store/interface.js';

/** Which limit of a middleware an override is for: `limit`, its name (needed when several rate limits could take it). */
export interface OverrideTarget {
  limit?: string;
}

/** The options of `setOverride` on a middleware's handle: the ttl, and the limit when several could take the override. */
export interface HttpOverrideOptions extends OverrideOptions, OverrideTarget {}

/** What the limits of a middleware (or of every route of a Fastify plugin) carry: the limiters in order, and each limit's name. */
export interface LimitSet {
  readonly limiters: readonly Limiter[];
  readonly limitNames: readonly string[];
}

/** An operator's calls on a key, in every limit of the middlewares that hold it (their handle's methods, and Fastify's `app.rateLimit`). */
export interface KeyControls {
  /** Forgets `key` in every limit (for example after a successful login); rejects when a limit's store fails or times out. */
  resetKey(key: string): Promise<void>;
  /** Bans `key` in every rate limit for `duration` (see `limiter.block`): needs `bans: true`. */
  blockKey(key: string, duration: Duration, options?: BlockOptions): Promise<void>;
  /** Lifts `key`'s ban (or lockout) in every rate limit, on every instance. */
  unblockKey(key: string): Promise<void>;
  /**
   * Decides `key` with `algorithm` in the rate limit of its kind (or the one named `options.limit`;
   * of a Fastify plugin: in every route's) for `options.ttl`, on every instance sharing the store
   * (see `limiter.setOverride`): needs `overrides: true`.
   */
  setOverride(key: string, algorithm: Algorithm, options: HttpOverrideOptions): Promise<void>;
  /** `key`'s live override in the first rate limit that has one (or in the one named `options.limit`), or undefined. */
  getOverride(key: string, options?: OverrideTarget): Promise<StoredOverride | undefined>;
  /** Removes `key`'s override in every rate limit (or in the one named `options.limit`). */
  clearOverride(key: string, options?: OverrideTarget): Promise<void>;
}

/** The key controls of `sets` (read at each call: a Fastify plugin's routes are added as they are prepared); `owner` starts each verb's name in errors (`''`, `'fastify.rateLimit.'`). */
export function keyControls(sets: Iterable<LimitSet>, owner: string): KeyControls {
  return {
    async resetKey(key) {
      await Promise.all([...sets].flatMap((set) => set.limiters.map((limiter) => limiter.reset(key))));
    },
    async blockKey(key, duration, options) {
      await Promise.all(bannable(sets, `${owner}blockKey`).map((limiter) => limiter.block(key, duration, options)));
    },
    async unblockKey(key) {
      await Promise.all(bannable(sets, `${owner}unblockKey`).map((limiter) => limiter.unblock(key)));
    },
    async setOverride(key, algorithm, options) {
      const verb = `${owner}setOverride`;
      const target = targetOf(options, verb);
      const { limit: _, ...overrideOptions } = options ?? ({} as HttpOverrideOptions);
      await Promise.all(
        overridable(sets, verb, target, (algorithm as Partial<Algorithm> | null)?.kind ?? '').map((limiter) =>
          limiter.setOverride(key, algorithm, overrideOptions as OverrideOptions),
        ),
      );
    },
    async getOverride(key, options) {
      for (const limiter of overridable(
        sets,
        `${owner}getOverride`,
        targetOf(options, `${owner}getOverride`),
        undefined,
      )) {
        const found = await limiter.getOverride(key);
        if (found !== undefined) return found;
      }
      return undefined;
    },
    async clearOverride(key, options) {
      await Promise.all(
        overridable(sets, `${owner}clearOverride`, targetOf(options, `${owner}clearOverride`), undefined).map(
          (limiter) => limiter.clearOverride(key),
        ),
      );
    },
  };
}

/**
 * The rate limits of `sets`, which all check bans; else, before any is banned, an `UnsupportedError`
 * naming `verb` (also when there is no rate limit at all).
 */
export function bannable(sets: Iterable<LimitSet>, verb: string): readonly Limiter[] {
  const limiters = [...sets].flatMap((set) => set.limiters.filter((limiter) => !limiter.isConcurrencyLimit));
  if (limiters.length === 0 || limiters.some((limiter) => !coreOf(limiter)!.bans)) {
    throw new UnsupportedError(
      `${verb}() needs bans: true on the middleware (and on each route with limits of its own): each decision then reads the key's ban in the same store step.`,
    );
  }
  return limiters;
}

/** The limit name of `options` (an object or undefined), checked. */
function targetOf(options: OverrideTarget | undefined, verb: string): string | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object')
    throw new InvalidOptionError(`${verb}.options`, options, '{ limit } naming one of the limits');
  if (options.limit !== undefined && typeof options.limit !== 'string')
    throw new InvalidOptionError(`${verb}.options.limit`, options.limit, "a limit's name");
  return options.limit;
}

/**
 * The rate limits an override call is for: the one named `limit` in each set, or (no name) those whose
 * algorithm is of `kind` (undefined: every rate limit; a limit choosing its algorithm per request takes
 * any kind), at most one per set when a `kind` is given; all checking overrides. Otherwise, before any
 * is changed, an `InvalidOptionError` or `UnsupportedError` naming `verb`.
 */
function overridable(
  sets: Iterable<LimitSet>,
  verb: string,
  limit: string | undefined,
  kind: string | undefined,
): readonly Limiter[] {
  const chosen: Limiter[] = [];
  const names = new Set<string>();
  for (const { limiters, limitNames } of sets) {
    const matching = limiters.filter((limiter, i) => {
      if (limiter.isConcurrencyLimit) return false;
      names.add(limitNames[i]!);
      if (limit !== undefined) return limitNames[i] === limit;
      return kind === undefined || limiter.algorithm === undefined || limiter.algorithm.kind === kind;
    });
    if (limit === undefined && kind !== undefined && matching.length > 1) {
      throw new InvalidOptionError(
        `${verb}.options.limit`,
        undefined,
        `the name of the limit to override (several are ${kind} limits: ${limitNames.join(', ')})`,
      );
    }
    chosen.push(...matching);
  }
  if (chosen.length === 0) {
    const detail =
      limit === undefined
        ? `a rate limit of this middleware of the override's kind (${kind ?? 'any'})`
        : `the name of a rate limit: ${[...names].join(', ') || 'there is none'}`;
    throw new InvalidOptionError(
      limit === undefined ? `${verb}.algorithm` : `${verb}.options.limit`,
      limit ?? kind,
      detail,
    );
  }
  if (chosen.some((limiter) => !coreOf(limiter)!.overrides)) {
    throw new UnsupportedError(
      `${verb}() needs overrides: true on the middleware (and on each route with limits of its own): each decision then reads the key's override in the same store step.`,
    );
  }
  return chosen;
}
