// What simulated clients did (`rl simulate --clients`): the figures of the report's `clients`.

/**
 * How the simulated clients retry (`--retry`), each with `@rl/client`'s own decisions:
 * - `none`: no retry (one attempt per request);
 * - `immediate`: the naive client, which retries at once, whatever the server says;
 * - `retry-after`: waits exactly the server's `Retry-After` (else the RateLimit `t`), no jitter;
 * - `jitter`: `@rl/client`'s default, the server's time plus a uniform draw over one second;
 * - `paced`: `jitter`, and the `PacingBook` holds requests to a partition the fields reported empty.
 */
export type RetryMode = 'none' | 'immediate' | 'retry-after' | 'jitter' | 'paced';

export const RETRY_MODES: readonly RetryMode[] = ['none', 'immediate', 'retry-after', 'jitter', 'paced'];

/** The first retries of the requests denied once (the "second wave"), per slice of the report. */
export interface SecondWave {
  /** The first and the last of them, ms since the first arrival. */
  readonly firstMs: number;
  readonly lastMs: number;
  /** Slices from the first one's to the last one's, both included. */
  readonly slices: number;
  /** The most of them in one slice, and their mean over `slices`. */
  readonly peak: number;
  readonly mean: number;
}

/**
 * What the clients of one limit did (`--clients`). Every arrival of the traffic is one logical request
 * of client `i mod clients`; each attempt is one request of the limit's report. Counts of requests or
 * attempts; times in ms since the first arrival.
 */
export interface ClientStats {
  readonly retry: RetryMode;
  readonly clients: number;
  /** Retries allowed after a request's first attempt (at most `retries + 1` attempts). */
  readonly retries: number;
  /** Logical requests (the traffic's arrivals). */
  readonly requests: number;
  /** Attempts sent (the limit's `requests`). */
  readonly attempts: number;
  /** Logical requests admitted in the end (one attempt each). */
  readonly admitted: number;
  /** Attempts answered 429. */
  readonly denied: number;
  /** Logical requests that ended without being admitted (out of retries, of time, or never retried). */
  readonly gaveUp: number;
  /** 429s per admitted request; null when none was admitted. */
  readonly deniedPerAdmitted: number | null;
  /** The most attempts one logical request made. */
  readonly maxAttempts: number;
  /** Attempts held by pacing before they were sent. */
  readonly held: number;
  /** 429s to attempts sent after their client had read RateLimit fields on an answer. */
  readonly deniedInformed: number;
  /** When the last logical request was admitted (arrival + delay), null when none was. */
  readonly lastThroughMs: number | null;
  /** Retries (attempts after a request's first) per slice of the report, from its `startMs`. */
  readonly retrySlices: readonly number[];
  /** The most retries in one slice. */
  readonly peakRetrySlice: number;
  /** The first retries, null when nothing was retried. */
  readonly secondWave: SecondWave | null;
}
