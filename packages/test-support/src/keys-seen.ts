import type { Observer } from '@rl/core';

/** The keys a limiter decided on, in order, and the options (an observer with `observeKeys`) that report them. */
export interface KeysSeen {
  readonly keys: string[];
  /** Spread into a limiter's or a middleware's options. */
  readonly reporting: { readonly observer: Observer; readonly observeKeys: true };
}

/** Records the key of each decision of the limiters given `reporting` ('' for a decision without one). */
export function keysSeen(): KeysSeen {
  const keys: string[] = [];
  return { keys, reporting: { observer: { decision: (event) => void keys.push(event.key ?? '') }, observeKeys: true } };
}
