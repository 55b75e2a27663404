import { errorDocsUrl, type RateLimitError } from '../errors.js';
import type { RateLimitResult } from './result.js';

/** Content type of the default denial body (RFC 9457 problem details). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem types of draft-ietf-httpapi-ratelimit-headers (registered at IANA's HTTP Problem Types). */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
export const TEMPORARY_REDUCED_CAPACITY_TYPE =
  'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';

/**
 * The default denial body, RFC 9457 problem details with the problem types of the RateLimit headers
 * draft: a 429 is `quota-exceeded`, with `violated-policies` (the names of the policies the request
 * exceeded, as the RateLimit headers name them), `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
 * "title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"…",
 * "violated-policies":["100-in-1m"],"retryAfter":12}`; a 503 (a fail-closed store that failed) is
 * `temporary-reduced-capacity` (its detail says why: the store, or an overload the `adaptive` limit
 * refused). `retryAfter` is in seconds, equal to the Retry-After header.
 */
export function problemBody(result: RateLimitResult): string {
  if (result.overloaded) return overloadProblem(result.retryAfterSeconds);
  return buildProblem(result.statusCode, result.retryAfterSeconds, result.violatedPolicy);
}

/** The body of a refusal by the adaptive concurrency limit: `temporary-reduced-capacity`, an overload, not a quota. */
function overloadProblem(seconds: number): string {
  return `{"type":"${TEMPORARY_REDUCED_CAPACITY_TYPE}","title":"Service Unavailable","status":503,"detail":"The server is overloaded: it sheds work to keep the work it admits fast. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.","retryAfter":${seconds}}`;
}

function buildProblem(status: number, seconds: number, policy: string): string {
  const when = `Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;
  return status === 503
    ? `{"type":"${TEMPORARY_REDUCED_CAPACITY_TYPE}","title":"Service Unavailable","status":503,"detail":"The rate limiter cannot reach its store. ${when}","retryAfter":${seconds}}`
    : `{"type":"${QUOTA_EXCEEDED_TYPE}","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"Rate limit exceeded. ${when}","violated-policies":[${JSON.stringify(policy)}],"retryAfter":${seconds}}`;
}

/**
 * The body of the 500 a Fetch handler answers for an rl error that refused a request (no client
 * address without a `key`, a bad key or cost), where no framework's error handler would: RFC 9457
 * problem details whose `type` is the code's section of the errors page, with the error's `code` as
 * an extension member, as the frameworks' error handlers show it:
 * `{"type":"…/docs/errors.md#rl_invalid_key","title":"Internal Server Error","status":500,"detail":"…","code":"RL_INVALID_KEY"}`.
 */
export function errorProblemBody(error: RateLimitError): string {
  return JSON.stringify({
    type: errorDocsUrl(error.code),
    title: 'Internal Server Error',
    status: 500,
    detail: error.message,
    code: error.code,
  });
}

/**
 * {@link problemBody} with a memory of the last body built, one per middleware: a flood of denials
 * mostly repeats the same status and Retry-After, and then gets the same string back.
 */
export class ProblemBodies {
  private seconds = -1;
  private status = 0;
  private policy = '';
  private body = '';

  of(result: RateLimitResult): string {
    const seconds = result.retryAfterSeconds;
    if (result.overloaded) return overloadProblem(seconds);
    const status = result.statusCode;
    const policy = result.violatedPolicy;
    if (seconds !== this.seconds || status !== this.status || policy !== this.policy) {
      this.body = buildProblem(status, seconds, policy);
      this.seconds = seconds;
      this.status = status;
      this.policy = policy;
    }
    return this.body;
  }
}
