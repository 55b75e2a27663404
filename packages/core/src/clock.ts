/** A clock returns the current time in milliseconds. */
export type Clock = () => number;

/**
 * The default clock: `Date.now()`, wall-clock milliseconds since the epoch (windows align to multiples
 * of their length on it). It is the cheapest clock in V8 (`performance.now()` costs several times more
 * per call, which shows on a per-request path). System clock adjustments are safe: every algorithm
 * treats time going backwards as no time passing and never moves stored time back.
 */
export const systemClock: Clock = Date.now;
