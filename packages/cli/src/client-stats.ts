// What simulated clients did (`rl simulate --clients`): the figures of the report's `clients`.

import type { Traffic } from './traffic.js';

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

/** What the clients did to one limit, before the report: the counts are those of its {@link ClientStats}. */
export interface ClientRun extends Pick<
  ClientStats,
  'admitted' | 'denied' | 'gaveUp' | 'maxAttempts' | 'held' | 'deniedInformed'
> {
  /** Every attempt, in the order sent: the traffic `simulate` replays. */
  readonly attempts: Traffic;
  /** When the last logical request was admitted (arrival + delay), on the traffic's clock. */
  readonly lastThrough: number | undefined;
  /** When the last attempt was sent. */
  readonly lastMs: number;
  readonly retryTimes: readonly number[];
  readonly secondWaveTimes: readonly number[];
}

/** The run's figures, its retries in the report's slices. */
export function clientStats(
  run: ClientRun,
  o: {
    retry: RetryMode;
    clients: number;
    retries: number;
    first: number;
    startMs: number;
    sliceMs: number;
    sliceCount: number;
  },
): ClientStats {
  const slice = (t: number) => Math.floor((t - o.startMs) / o.sliceMs);
  const retrySlices = new Array<number>(o.sliceCount).fill(0);
  for (const t of run.retryTimes) retrySlices[slice(t)]!++;
  const requests = run.admitted + run.gaveUp;
  return {
    retry: o.retry,
    clients: o.clients,
    retries: o.retries,
    requests,
    attempts: run.attempts.times.length,
    admitted: run.admitted,
    denied: run.denied,
    gaveUp: run.gaveUp,
    deniedPerAdmitted: run.admitted === 0 ? null : run.denied / run.admitted,
    maxAttempts: run.maxAttempts,
    held: run.held,
    deniedInformed: run.deniedInformed,
    lastThroughMs: run.lastThrough === undefined ? null : run.lastThrough - o.first,
    retrySlices,
    peakRetrySlice: Math.max(0, ...retrySlices),
    secondWave: secondWave(run.secondWaveTimes, slice, o.first),
  };
}

/** The first retries' spread in slices: its first and last, its peak slice and its mean slice. */
function secondWave(times: readonly number[], slice: (t: number) => number, first: number): SecondWave | null {
  if (times.length === 0) return null;
  const from = slice(times[0]!);
  const to = slice(times[times.length - 1]!);
  const counts = new Array<number>(to - from + 1).fill(0);
  for (const t of times) counts[slice(t) - from]!++;
  return {
    firstMs: times[0]! - first,
    lastMs: times[times.length - 1]! - first,
    slices: to - from + 1,
    peak: Math.max(...counts),
    mean: times.length / (to - from + 1),
  };
}
