import { emitWarningOnce } from './runtime.js';

/** The code of the warning for a span (a window, an interval, a lockout, a ban, a ttl) given as a bare number under one second. */
export const SHORT_WINDOW_CODE = 'RL_SHORT_WINDOW';

/**
 * Warns `RL_SHORT_WINDOW` when a span (`field`, for example `fixedWindow.window`) was given as a bare
 * number under 1000: a bare number is milliseconds, and `window: 60` or `blockDuration: 60` meant as
 * a minute (rate-limiter-flexible's durations are seconds) is 60 ms, a limit 1000 times stricter or a
 * lockout 1000 times shorter than meant. Once per process per field and value; a string (`'60ms'`)
 * says the unit and is never warned about. The option stays valid.
 *
 * Called for the spans whose sub-second values are almost surely a mistake: a window, a bucket's
 * interval, `blockDuration`, `limiter.block`'s duration, `deny(req)`'s duration, an override's ttl,
 * `idempotencyTtl` and a concurrency `lease`. Not for a timeout, a `maxDelay`, a quota lease's ttl or
 * `storeRetryInterval`, where a few hundred ms is a normal choice (see docs/errors.md).
 */
export function warnShortSpan(value: unknown, field: string): void {
  if (typeof value !== 'number' || !(value < 1000)) return;
  emitWarningOnce(
    `${field}=${value}`,
    `${field}: ${value} is ${value} ms: did you mean '${value}s'? A bare number is milliseconds; write '${value}ms' to keep ${value} ms without this warning.`,
    { code: SHORT_WINDOW_CODE },
  );
}
