import { emitWarningOnce } from './runtime.js';

/** The code of the warning for a window or interval given as a bare number under one second. */
export const SHORT_WINDOW_CODE = 'RL_SHORT_WINDOW';

/**
 * Warns `RL_SHORT_WINDOW` when a window or interval (`field`, for example `fixedWindow.window`) was
 * given as a bare number under 1000: a bare number is milliseconds, and `window: 60` meant as a
 * minute is 60 ms, a limit 1000 times stricter than meant. Once per process per field and value; a
 * string (`'60ms'`) says the unit and is never warned about. The option stays valid.
 */
export function warnShortSpan(value: unknown, field: string): void {
  if (typeof value !== 'number' || !(value < 1000)) return;
  emitWarningOnce(
    `${field}=${value}`,
    `${field}: ${value} is ${value} ms: did you mean '${value}s'? A bare number is milliseconds; write '${value}ms' to keep ${value} ms without this warning.`,
    { code: SHORT_WINDOW_CODE },
  );
}
