import type { Algorithm } from '../algorithm.js';
import { withBlock } from '../algorithms/block.js';
import { UnsupportedError } from '../errors.js';
import { optionalBoolean, refuseOnConcurrency, spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import type { Store } from '../store/interface.js';

/**
 * The `blockDuration` option in ms (a duration from 1 ms to `MAX_SPAN_MS`), or the block the
 * algorithm already carries when it is not given (0: none). A lockout needs a rate limit (`withBlock`
 * says so) and a store that runs lockouts.
 */
export function parseBlockDuration(
  value: unknown,
  algorithm: Algorithm | undefined,
  store: Store,
  field: string,
): number {
  const blockMs = value === undefined ? (algorithm?.blockMs ?? 0) : spanOption(value, field);
  warnShortSpan(value, field);
  if (blockMs === 0) return 0;
  if (algorithm !== undefined) withBlock(algorithm, blockMs, field);
  checkStoreBlocks(store, field);
  return blockMs;
}

/** The `bans` option: a boolean (default false), for a rate limit on a store that holds bans. */
export function parseBans(value: unknown, algorithm: Algorithm | undefined, store: Store, field: string): boolean {
  return stateOption(value, algorithm, field, {
    onConcurrency: 'no bans on a concurrency limit (a permit is not banned; give the client a rate limit with bans)',
    held: store.capabilities.bans === true,
    unsupported: `This store does not hold bans (${field}): use a store whose capabilities include bans, such as MemoryStore or RedisStore.`,
  });
}

/** The `overrides` option: a boolean (default false), for a rate limit on a store that overrides its kind (for a limiter whose calls bring their algorithms: any kind). */
export function parseOverrides(value: unknown, algorithm: Algorithm | undefined, store: Store, field: string): boolean {
  const kinds = store.capabilities.overrides ?? [];
  return stateOption(value, algorithm, field, {
    onConcurrency: 'no overrides on a concurrency limit (give the client a rate limit with overrides)',
    held: algorithm === undefined ? kinds.length > 0 : kinds.includes(algorithm.kind),
    unsupported: `This store does not hold overrides of ${algorithm === undefined ? 'any kind' : `the ${algorithm.kind} kind`} (${field}): use a store whose capabilities.overrides lists it, such as MemoryStore or RedisStore (RedisStore: every rate kind but the sliding log).`,
  });
}

/** What turning on state kept beside a rate limit's (bans, overrides) needs, and what its refusals say. */
interface StateNeeds {
  /** Why a concurrency limit takes no such state, and what to give instead. */
  readonly onConcurrency: string;
  /** Whether the store holds that state for the algorithm. */
  readonly held: boolean;
  /** The message of the `UnsupportedError` of a store that does not. */
  readonly unsupported: string;
}

/** A boolean option (default false) that turns on state kept beside a rate limit's: refused on a concurrency limit and on a store without it. */
function stateOption(value: unknown, algorithm: Algorithm | undefined, field: string, needs: StateNeeds): boolean {
  if (!optionalBoolean(value, field, false)) return false;
  refuseOnConcurrency(algorithm, field, value, needs.onConcurrency);
  if (!needs.held) throw new UnsupportedError(needs.unsupported);
  return true;
}

/** Throws the `UnsupportedError` of a store without lockouts (`capabilities.blocks`), for `what` (the option, or the algorithm that carries one). */
export function checkStoreBlocks(store: Store, what: string): void {
  if (store.capabilities.blocks !== true) {
    throw new UnsupportedError(
      `This store does not run lockouts (${what}): use a store whose capabilities include blocks, such as MemoryStore or RedisStore.`,
    );
  }
}

/** The options of `limiter.block`. */
export interface BlockOptions {
  /** Why the key is banned, for the `'block'` event and the logs (printable ASCII, at most 200 characters). */
  reason?: string;
}

/** What a `'block'` event tells: a key banned through this limiter, for how long, and why. */
export interface BlockEvent {
  readonly key: string;
  readonly durationMs: number;
  readonly reason: string | undefined;
}
