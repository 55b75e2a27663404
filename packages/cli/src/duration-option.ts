import { parseDuration } from '@rl/core';
import { parseTimerDuration } from '@rl/core/store';

/**
 * An option's duration as the parsers take it: a plain number given as text (a command line's and a
 * JSON file's values reach the CLI as text) is that many milliseconds, as their message says; any
 * other text (`'1s'`, `'1.5 minutes'`) as it is.
 */
function asDuration(text: string | undefined): unknown {
  return text !== undefined && /^\s*\d+(?:\.\d+)?\s*$/.test(text) ? Number(text) : text;
}

/** The duration in ms of option `field`'s text (see `parseDuration`); a plain number is milliseconds. */
export function durationOption(text: string | undefined, field: string): number {
  return parseDuration(asDuration(text), field);
}

/** As {@link durationOption}, for a duration a Node timer waits (at most 24 days: see `parseTimerDuration`). */
export function timerDurationOption(text: string | undefined, field: string): number {
  return parseTimerDuration(asDuration(text), field);
}
