import type { StopReason } from './retry-policy.js';

/** An attempt is to be retried: after `waitMs`. */
export interface RetryEvent {
  readonly method: string;
  readonly url: string;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** Its status; undefined for a network error. */
  readonly status: number | undefined;
  /** Milliseconds until the next attempt (the server's time plus jitter, or a backoff). */
  readonly waitMs: number;
  /** The server's wait it honours (Retry-After, else the RateLimit `t`); undefined for a backoff. */
  readonly serverWaitMs: number | undefined;
}

/** A request waited at the pacing gate before it was sent (an attempt that went at once is not told). */
export interface PacedEvent {
  readonly method: string;
  readonly url: string;
  /** Milliseconds it waited for its partition's reset, or for the answer of the request probing it. */
  readonly waitMs: number;
}

/** A logical request ends on a retryable answer it may not retry (the answer is returned, or the error thrown). */
export interface GiveUpEvent {
  readonly method: string;
  readonly url: string;
  /** Attempts made. */
  readonly attempts: number;
  /** The last attempt's status; undefined for a network error. */
  readonly status: number | undefined;
  readonly reason: Exclude<StopReason, 'final'>;
  /** Milliseconds since the logical request began. */
  readonly elapsedMs: number;
}

/**
 * What a client tells of its retries, waits and paced requests: the numbers to graph (retries by
 * status, time spent waiting, requests paced, requests given up by reason). Every method is optional;
 * one that throws is ignored (an observer never breaks a request).
 */
export interface ClientObserver {
  onRetry?(event: RetryEvent): void;
  onPaced?(event: PacedEvent): void;
  onGiveUp?(event: GiveUpEvent): void;
}

/** Calls an observer's method, a throw ignored, and a rejection of an async one (never an unhandled rejection). */
export function tell<E>(method: ((event: E) => void) | undefined, observer: ClientObserver, event: E): void {
  if (method === undefined) return;
  try {
    const returned: unknown = method.call(observer, event);
    if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function')
      (returned as PromiseLike<unknown>).then(undefined, () => undefined);
  } catch {
    // An observer's failure is its own: the request goes on.
  }
}
