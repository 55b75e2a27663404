import { systemTimers, type Timers } from '../timers.js';

/**
 * Tells `listener` once when the client of a request leaves (a Node response's `'close'`, a Fetch
 * request's abort), and returns what stops listening.
 */
export type ClientLeaving = (listener: () => void) => () => void;

/**
 * Holds a request for `delayMs`. Resolves true when the time has passed, false as soon as its client
 * leaves first (`leaving`): then no timer and no listener is left behind. The caller checks that the
 * client is still there before holding.
 */
export function holdRequest(leaving: ClientLeaving, delayMs: number, timers: Timers = systemTimers): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = timers.setTimeout(() => {
      stopListening();
      resolve(true);
    }, delayMs);
    const stopListening = leaving(() => {
      timers.clearTimeout(timer);
      resolve(false);
    });
  });
}
