import type { LimiterCore } from './core.js';

const cores = new WeakMap<object, LimiterCore>();

/** Ties `core` to the public limiter built over it (see {@link coreOf}). */
export function registerCore(limiter: object, core: LimiterCore): void {
  cores.set(limiter, core);
}

/** The core of a limiter from `createLimiter`; undefined for anything else. The engine's way in, not a public member. */
export function coreOf(limiter: unknown): LimiterCore | undefined {
  return typeof limiter === 'object' && limiter !== null ? cores.get(limiter) : undefined;
}
