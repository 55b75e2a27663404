import { makePolicy, type Policy } from '../decision.js';
import { parseDuration, type Duration } from '../duration.js';
import { checkOptions, integerAtLeast, optionalBoolean } from '../options.js';

/** The options of the window algorithms (fixed window, sliding log, sliding counter). */
export interface WindowOptions {
  limit: number;
  window: Duration;
  countDenied?: boolean;
}

/** The parsed options of a window algorithm and the algorithm fields they define. */
export interface ParsedWindow {
  readonly limit: number;
  readonly windowMs: number;
  readonly countDenied: boolean;
  /** Fields every window algorithm has, to spread into it. */
  readonly common: {
    readonly limit: number;
    readonly maxCost: number;
    readonly policy: Policy;
    readonly countDenied: boolean;
    readonly mayDelay: false;
    readonly params: Readonly<Record<string, number>>;
    readonly options: Readonly<Record<string, unknown>>;
  };
}

/**
 * Checks a window algorithm's options (`owner` names it in errors, for example `fixedWindow`):
 * `limit` an integer of at least 1, `window` a duration, `countDenied` a boolean (default false);
 * anything else is an unknown option.
 */
export function parseWindowOptions(options: WindowOptions, owner: string): ParsedWindow {
  const o = checkOptions(options, ['limit', 'window', 'countDenied'], owner);
  const limit = integerAtLeast(o.limit, `${owner}.limit`);
  const windowMs = parseDuration(o.window, `${owner}.window`);
  const countDenied = optionalBoolean(o.countDenied, `${owner}.countDenied`, false);
  return {
    limit,
    windowMs,
    countDenied,
    common: {
      limit,
      maxCost: limit,
      policy: makePolicy(limit, windowMs),
      countDenied,
      mayDelay: false,
      params: { limit, windowMs, countDenied: countDenied ? 1 : 0 },
      options: { limit, window: windowMs, countDenied },
    },
  };
}
