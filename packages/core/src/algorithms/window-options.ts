import { makePolicy, type Policy } from '../decision.js';
import type { Duration } from '../duration.js';
import { checkOptions, countOption, optionalBoolean, spanOption } from '../options.js';
import { WINDOW_PEER_OPTIONS } from '../peer-option-hints.js';
import { warnShortSpan } from '../short-span.js';
import type { AlgorithmSpec } from './define.js';

/**
 * The options of the window algorithms (fixed window, sliding log, sliding counter). What a window is,
 * and how units are counted in it, each algorithm's own doc comment says.
 */
export interface WindowOptions {
  /** Units admitted per window (an integer from 1 to 999999999999999). */
  limit: number;
  /** The window length (from 1 ms to 999999999999999 ms). */
  window: Duration;
  /**
   * Count (or record) denied requests too: a count-all-attempts policy, for example against login
   * brute force. Default false.
   */
  countDenied?: boolean;
}

/** The parsed options of a window algorithm and the algorithm fields they define. */
export interface ParsedWindow {
  readonly limit: number;
  readonly windowMs: number;
  readonly countDenied: boolean;
  readonly policy: Policy;
  /**
   * Fields every window algorithm has, to spread into its spec (see `define.ts`), with the
   * configuration every window algorithm's Lua twin reads: `LIMIT`, `WINDOW` (ms), `COUNT_DENIED` (1 or 0).
   */
  readonly common: Pick<
    AlgorithmSpec,
    'limit' | 'maxCost' | 'policy' | 'countDenied' | 'mayDelay' | 'maxReserveMs' | 'options' | 'constants'
  >;
}

/**
 * Checks a window algorithm's options (`owner` names it in errors, for example `fixedWindow`):
 * `limit` an integer from 1 to `MAX_COUNT`, `window` a duration from 1 ms to `MAX_SPAN_MS` (so a
 * header can say both), `countDenied` a boolean (default false); anything else is an unknown option.
 */
export function parseWindowOptions(options: WindowOptions, owner: string): ParsedWindow {
  const o = checkOptions(options, ['limit', 'window', 'countDenied'], owner, WINDOW_PEER_OPTIONS);
  const limit = countOption(o.limit, `${owner}.limit`);
  const windowMs = spanOption(o.window, `${owner}.window`);
  warnShortSpan(o.window, `${owner}.window`);
  const countDenied = optionalBoolean(o.countDenied, `${owner}.countDenied`, false);
  const policy = makePolicy(limit, windowMs);
  return {
    limit,
    windowMs,
    countDenied,
    policy,
    common: {
      limit,
      maxCost: limit,
      policy,
      countDenied,
      mayDelay: false,
      // A reservation goes at most into the next window.
      maxReserveMs: windowMs,
      options: { limit, window: windowMs, countDenied },
      constants: [
        { name: 'LIMIT', value: limit },
        { name: 'WINDOW', value: windowMs },
        { name: 'COUNT_DENIED', value: countDenied ? 1 : 0 },
      ],
    },
  };
}
