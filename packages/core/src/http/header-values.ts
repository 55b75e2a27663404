import { InvalidOptionError } from '../errors.js';
import { MAX_COUNT, isPrintableAscii } from '../options.js';

// The values the headers say: structured-field strings, and numbers clamped to what a header can hold.

/** Serialises a structured-field sf-string: `"` and `\` escaped. Only printable ASCII is allowed. */
export function sfString(text: string): string {
  if (!isPrintableAscii(text))
    throw new InvalidOptionError('name', text, 'printable ASCII characters only (a structured-field string)');
  return `"${text.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * The largest number any header here writes: an RFC 9651 structured-field integer has at most 15
 * digits, and a number up to it prints as plain digits in every format (never an exponent). The same
 * bound the options are held to ({@link MAX_COUNT}).
 */
export const MAX_HEADER_INTEGER = MAX_COUNT;

// The clamps below cost a comparison or two per number. The options cannot produce a value outside
// the range (they are bounded at creation), but a custom store or algorithm can: a header then says
// the nearest representable value, and a value that is not a number at all says the restrictive end
// (no units left, the longest wait), never `NaN`, `Infinity` or `1e+21`.

/** Seconds for a header, rounded up from milliseconds: from 0 to {@link MAX_HEADER_INTEGER}; NaN is the longest. */
export function ceilSeconds(ms: number): number {
  if (ms <= 0) return 0;
  const seconds = Math.ceil(ms / 1000);
  return seconds <= MAX_HEADER_INTEGER ? seconds : MAX_HEADER_INTEGER;
}

/** How close (ms) a decision's time must be to the wall clock for it to be taken as a wall-clock time (see {@link epochResetSeconds}). */
const WALL_CLOCK_TOLERANCE_MS = 1000;

/**
 * The epoch second of a reset `resetMs` after a decision taken at `at` (the clock its store decided
 * with), for the legacy `X-RateLimit-Reset`. One instant, the decision's: when `at` is a wall-clock
 * time (within a second of `wallNow`: `Date.now()` of a memory store, Redis `TIME`), the reset is
 * `at + resetMs`, the same for every request of one window however long the response took to write
 * (reading the clock again after the decision moved it by a second whenever the window ended on a
 * whole second); forgiving the millisecond `resetMs` was rounded up by. Otherwise (a limiter's fake or
 * monotonic `clock`) `wallNow + resetMs`. At most {@link MAX_HEADER_INTEGER}.
 */
export function epochResetSeconds(at: number, resetMs: number, wallNow: number): number {
  const reset = Math.abs(wallNow - at) < WALL_CLOCK_TOLERANCE_MS ? at + resetMs - 1 : wallNow + resetMs;
  return ceilSeconds(reset);
}

/**
 * The seconds of `Retry-After` (and the problem body's `retryAfter`) for a denial `ms` from now: whole
 * seconds rounded up, at least 1, at most {@link MAX_HEADER_INTEGER}; NaN is the longest.
 */
export function retryAfterSeconds(ms: number): number {
  if (ms <= 1000) return 1;
  const seconds = Math.ceil(ms / 1000);
  return seconds <= MAX_HEADER_INTEGER ? seconds : MAX_HEADER_INTEGER;
}

/**
 * The Retry-After (and `retryAfter`, and the denying limit's `t`) of a denial by a concurrency limit:
 * 1 second, a short fixed hint. A permit comes back as soon as a request in flight ends, usually
 * within milliseconds; the time the store reports (until the oldest lease expires, 30 s for a lease
 * of 30 s) is only an upper bound for a permit that is never released, and would tell well-behaved
 * clients to wait far too long. 1 is the shortest whole number of seconds the header can say.
 */
export const CONCURRENCY_RETRY_AFTER_SECONDS = 1;

/**
 * The Retry-After seconds of a denial `ms` from now ({@link retryAfterSeconds}), or
 * {@link CONCURRENCY_RETRY_AFTER_SECONDS} when a concurrency limit (`leases`) denied and its store
 * answered (a store failure keeps the failure policy's retry).
 */
export function denialRetrySeconds(ms: number, leases: boolean, storeAnswered: boolean): number {
  return leases && storeAnswered ? CONCURRENCY_RETRY_AFTER_SECONDS : retryAfterSeconds(ms);
}

/** Seconds a source says (already whole), kept from 1 to {@link MAX_HEADER_INTEGER}; NaN is the longest. */
export function clampSeconds(seconds: number): number {
  return seconds <= MAX_HEADER_INTEGER ? (seconds >= 1 ? seconds : 1) : MAX_HEADER_INTEGER;
}

/** A count for a header: a whole number (rounded down), 0 below 1 (and for NaN), at most {@link MAX_HEADER_INTEGER}. */
export function clampCount(units: number): number {
  return units >= 1 ? (units <= MAX_HEADER_INTEGER ? Math.floor(units) : MAX_HEADER_INTEGER) : 0;
}
