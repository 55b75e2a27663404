import type { RateLimitResult } from './result.js';

/** Content type of the default denial body (RFC 9457 problem details). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The default denial body, RFC 9457 problem details:
 * `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"…","retryAfter":12}`
 * (`retryAfter` in seconds, equal to the Retry-After header). 503 when a fail-closed store failed.
 */
export function problemBody(result: RateLimitResult): string {
  return buildProblem(result.statusCode, result.retryAfterSeconds);
}

function buildProblem(status: number, seconds: number): string {
  const when = `Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;
  return status === 503
    ? `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The rate limiter cannot reach its store. ${when}","retryAfter":${seconds}}`
    : `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded. ${when}","retryAfter":${seconds}}`;
}

/**
 * {@link problemBody} with a memory of the last body built, one per middleware: a flood of denials
 * mostly repeats the same status and Retry-After, and then gets the same string back.
 */
export class ProblemBodies {
  private seconds = -1;
  private status = 0;
  private body = '';

  of(result: RateLimitResult): string {
    const seconds = result.retryAfterSeconds;
    const status = result.statusCode;
    if (seconds !== this.seconds || status !== this.status) {
      this.body = buildProblem(status, seconds);
      this.seconds = seconds;
      this.status = status;
    }
    return this.body;
  }
}
