import type { AdaptiveConcurrency } from '../adaptive/adaptive-concurrency.js';
import { InvalidOptionError } from '../errors.js';
import type { MaybePromise } from '../store/interface.js';
import type { HttpConfig, PriorityFunction } from './option-types.js';
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

/** The `adaptive` limit and its `priority` function, checked. */
export function adaptiveOptions<Req>(
  adaptive: unknown,
  priority: unknown,
  owner: string,
): Pick<HttpConfig<Req>, 'adaptive' | 'priority'> {
  // By its shape, not `instanceof`: a limit made by the other build of @rl/core (ESM, CommonJS) is one too.
  if (adaptive !== undefined && !isAdaptiveLimit(adaptive))
    throw new InvalidOptionError(
      `${owner}.adaptive`,
      adaptive,
      'an adaptive limit: adaptiveConcurrency({ min, max }) from @rl/core',
    );
  if (priority !== undefined && typeof priority !== 'function')
    throw new InvalidOptionError(`${owner}.priority`, priority, 'a function of the request');
  const fn = priority as PriorityFunction<Req> | undefined;
  if (fn !== undefined && adaptive === undefined)
    throw new InvalidOptionError(
      `${owner}.priority`,
      priority,
      'no priority without adaptive: the classes are those of an adaptive limit',
    );
  return { adaptive: adaptive as AdaptiveConcurrency | undefined, priority: fn };
}

function isAdaptiveLimit(value: unknown): value is AdaptiveConcurrency {
  const v = value as Partial<Record<keyof AdaptiveConcurrency, unknown>> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.tryAcquire === 'function' &&
    typeof v.observe === 'function' &&
    typeof v.snapshot === 'function'
  );
}
