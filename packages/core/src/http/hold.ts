import { systemTimers, type Timers } from '../timers.js';

/** The parts of a Node `ServerResponse` used to notice that the client went away. */
export interface CloseNotifier {
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  readonly destroyed?: boolean;
}

/**
 * Holds a request for `delayMs`. Resolves true when the time has passed, false as soon as the
 * response closes first (the client disconnected): then no timer and no listener is left behind.
 */
export function holdRequest(res: CloseNotifier, delayMs: number, timers: Timers = systemTimers): Promise<boolean> {
  if (res.destroyed === true) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onClose = (): void => {
      timers.clearTimeout(timer);
      resolve(false);
    };
    const timer = timers.setTimeout(() => {
      res.removeListener('close', onClose);
      resolve(true);
    }, delayMs);
    res.once('close', onClose);
  });
}
