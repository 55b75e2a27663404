import type { AdaptiveConcurrency } from '../adaptive/adaptive-concurrency.js';
import type { MaybePromise } from '../store/interface.js';
import type { PriorityFunction } from './option-types.js';
import type { RateLimitResult } from './result.js';

/**
 * A middleware's decision with its `adaptive` limit after the rate limits: a request they admitted
 * takes a permit of its class (`priority`), held by its result until its response ends; with none
 * free, what the rate limits took is given back and the request is refused as an overload (503,
 * Retry-After: the baseline latency, at least a second). A skipped or denied request takes no permit.
 * A `priority` function that throws or answers a bad class fails the request (the framework's error
 * path) after giving back what the rate limits took. Synchronous when `decide` is.
 */
export function withAdaptiveAdmission<Req>(
  decide: (req: Req) => MaybePromise<RateLimitResult | undefined>,
  adaptive: AdaptiveConcurrency,
  priority: PriorityFunction<Req> | undefined,
): (req: Req) => MaybePromise<RateLimitResult | undefined> {
  const admit = (req: Req, result: RateLimitResult | undefined): RateLimitResult | undefined => {
    if (result === undefined || result.enforcedDeniedBy !== -1) return result;
    let permit;
    try {
      permit = adaptive.tryAcquire(priority === undefined ? undefined : priority(req));
    } catch (error) {
      void result.abandon();
      throw error;
    }
    if (permit !== undefined) {
      result.holdPermit(permit);
      return result;
    }
    void result.abandon();
    return result.overload(adaptive.retryAfterMs);
  };
  return (req) => {
    const result = decide(req);
    return result instanceof Promise ? result.then((r) => admit(req, r)) : admit(req, result);
  };
}

/** A response status that says the work failed for want of capacity (the backend's overload or timeout), not the request's fault. */
export function overloadStatus(status: number): boolean {
  return status === 503 || status === 504;
}
