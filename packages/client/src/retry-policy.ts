import type { PartitionReport } from './ratelimit-fields.js';

/**
 * The bounds and waits of retries, parsed once from the options (see `createFetch`). Pure data: the
 * decisions below take time and randomness as arguments, so that `rl simulate` can drive the very
 * same retry logic on a virtual clock.
 */
export interface RetryPolicy {
  /** Retries after the first attempt: a logical request makes at most `retries + 1` attempts. */
  readonly retries: number;
  /** No wait ends later than this many milliseconds after the logical request began. */
  readonly maxElapsedMs: number;
  /** A server's wait longer than this returns its response at once, and caps a pacing wait. */
  readonly maxRetryAfterMs: number;
  /** The spread of the full jitter added on top of a server's wait, milliseconds. */
  readonly jitterMs: number;
  /** The first backoff ceiling when the server names no time; it doubles per retry (full jitter beneath it). */
  readonly backoffMs: number;
}

/**
 * Statuses retried: 429 and 503 (a limit, an overload: both may say when), 408 (the server gave up
 * waiting for the request), 502 and 504 (a proxy found no answer upstream). Nothing else: another 4xx
 * is the request's own fault, another 5xx may have done the work.
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 502, 503, 504]);

/**
 * Methods retried without an `Idempotency-Key` (RFC 9110, 9.2.1: safe). PUT and DELETE are idempotent
 * too, but a rate limit charges each of their attempts: they are retried with a key, like POST.
 */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/** Why a logical request ends with the attempt it just made. */
export type StopReason =
  /** The answer is not one to retry (a success, a 404, …). */
  | 'final'
  /** A retryable answer to an unsafe method without an `Idempotency-Key`. */
  | 'not-replayable'
  /** `retries` retries were made. */
  | 'retries'
  /** The next attempt would begin past `maxElapsed`. */
  | 'max-elapsed'
  /** The server asked for a wait longer than `maxRetryAfter`. */
  | 'max-retry-after';

/** What the caller's loop does after an attempt: wait `waitMs` and try again, or stop. */
export type RetryStep =
  | {
      readonly retry: true;
      /** Milliseconds to wait before the next attempt: the server's time plus jitter, or a backoff. */
      readonly waitMs: number;
      /** The server's wait this one honours (Retry-After, else the RateLimit `t`); undefined for a backoff. */
      readonly serverWaitMs: number | undefined;
    }
  | { readonly retry: false; readonly reason: StopReason };

/** One attempt's answer: a status, or `undefined` for a network error; and the server's wait, if it named one. */
export interface AttemptOutcome {
  readonly status: number | undefined;
  readonly serverWaitMs: number | undefined;
}

/** Where the logical request stands after an attempt. */
export interface AttemptState {
  /** Attempts made so far, this one included (1 after the first). */
  readonly attempts: number;
  /** Milliseconds since the logical request began. */
  readonly elapsedMs: number;
  /** A safe method, or one with an `Idempotency-Key`: it may be sent again. */
  readonly replayable: boolean;
}

/**
 * `reports` as the pacing book should hold them: `Retry-After` (`retryAfterMs`, when valid) outranks a
 * conflicting `t`, so a partition reported empty is held no longer than it (the reports themselves
 * when there is no `Retry-After` or nothing to cut).
 */
export function outrankedReports(
  reports: readonly PartitionReport[],
  retryAfterMs: number | undefined,
): readonly PartitionReport[] {
  if (retryAfterMs === undefined) return reports;
  const cut = (r: PartitionReport) => r.remaining === 0 && r.resetMs !== undefined && r.resetMs > retryAfterMs;
  if (!reports.some(cut)) return reports;
  return reports.map((r) => (cut(r) ? { ...r, resetMs: retryAfterMs } : r));
}

/**
 * The wait a retryable answer names: `Retry-After` when it has a valid one, else (RFC 6585 leaves a
 * 429 without it) the longest `t` among the partitions the response reports empty; undefined when it
 * names none (then the caller backs off). Milliseconds.
 */
export function serverWait(retryAfterMs: number | undefined, reports: readonly PartitionReport[]): number | undefined {
  if (retryAfterMs !== undefined) return retryAfterMs;
  let wait: number | undefined;
  for (const r of reports) {
    if (r.remaining === 0 && r.resetMs !== undefined) wait = Math.max(wait ?? 0, r.resetMs);
  }
  return wait;
}

/**
 * The next step after an attempt: retry after a wait, or stop. `random` is one draw from [0, 1).
 *
 * The wait, in whole milliseconds, is the server's time plus `random × jitterMs` (never before the
 * server's time), or, when the server names none, full jitter beneath `backoffMs × 2^(attempts−1)`.
 * It stops when the answer is not retryable, when the method may not be replayed, after `retries`
 * retries, when the server's time is past `maxRetryAfterMs`, or when the server's time cannot be met
 * within `maxElapsedMs`. A wait is shortened to end at `maxElapsedMs`, and its jitter cut at
 * `maxRetryAfterMs`, never below the server's time.
 */
export function nextStep(policy: RetryPolicy, state: AttemptState, outcome: AttemptOutcome, random: number): RetryStep {
  if (outcome.status !== undefined && !RETRYABLE_STATUSES.has(outcome.status)) return stop('final');
  if (!state.replayable) return stop('not-replayable');
  if (state.attempts > policy.retries) return stop('retries');
  // Whole milliseconds, as timers count them: a wait rounded up never ends before the server's time,
  // and the time left rounded down never lets a timer's least millisecond carry a wait past maxElapsed.
  const left = Math.floor(policy.maxElapsedMs - state.elapsedMs);
  const server = outcome.serverWaitMs;
  if (server !== undefined) {
    if (server > policy.maxRetryAfterMs) return stop('max-retry-after');
    if (Math.ceil(server) > left) return stop('max-elapsed');
    // The jitter never carries a wait past maxRetryAfter (nor below the server's time).
    const cap = Math.min(left, Math.max(Math.ceil(server), policy.maxRetryAfterMs));
    return { retry: true, waitMs: Math.min(cap, Math.ceil(server + random * policy.jitterMs)), serverWaitMs: server };
  }
  const ceiling = Math.min(policy.maxRetryAfterMs, policy.backoffMs * 2 ** (state.attempts - 1));
  const waitMs = Math.ceil(random * ceiling);
  if (waitMs > left) return stop('max-elapsed');
  return { retry: true, waitMs, serverWaitMs: undefined };
}

function stop(reason: StopReason): RetryStep {
  return { retry: false, reason };
}
