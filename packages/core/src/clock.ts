/** A clock returns the current time in milliseconds. */
export type Clock = () => number;

const origin = performance.timeOrigin;

/**
 * The default clock: wall-clock milliseconds since the epoch at process start, advanced by the
 * monotonic `performance.now()`, so system clock adjustments never move it back or make it jump.
 * Windows align to multiples of their length on this clock.
 */
export const systemClock: Clock = () => origin + performance.now();
