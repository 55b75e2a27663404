/** A clock returns the current time in milliseconds. */
export type Clock = () => number;

/**
 * The default clock: `Date.now()`, wall-clock milliseconds since the epoch (windows align to multiples
 * of their length on it). It is the cheapest clock in V8 (`performance.now()` costs several times more
 * per call, which shows on a per-request path). System clock adjustments are safe: every algorithm
 * treats time going backwards as no time passing and never moves stored time back.
 */
export const systemClock: Clock = Date.now;

/**
 * The largest time a limiter's clock may read, in ms either side of 0: the range of a JavaScript
 * `Date` (±100,000,000 days from the epoch). A reading beyond it is a broken clock, not a time: it is
 * refused rather than stored, since a key's state written at such a time would hold the key (a window
 * or a bucket far in the future) long after the clock reads normal times again.
 */
export const MAX_CLOCK_MS = 8.64e15;
