import { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import type { RateLimitResult } from '@rl/core';
import type { DoubleCountCheck } from '@rl/core/http';

/**
 * Each request's `rateLimit` (the result of the last rl middleware that ran for it), behind an
 * accessor on the request prototype: Express swaps the prototype of every request, and adding an
 * own property to such an object is slow, a WeakMap entry much less so.
 */
const results = new WeakMap<object, unknown>();
/** Request prototypes (Express's `app.request`, one per app) whose `rateLimit` is known to be the accessor below. */
const accessorPrototypes = new WeakSet<object>();
const rateLimitAccessor: PropertyDescriptor = {
  get(this: object): unknown {
    return results.get(this);
  },
  set(this: object, value: unknown): void {
    results.set(this, value);
  },
  enumerable: false,
  configurable: true,
};

/**
 * True when `req.rateLimit` of this request reads {@link results}: its prototype chain reaches
 * Node's `IncomingMessage.prototype` through Express's request prototype, which then carries the
 * accessor (defined here the first time), and nothing on the way (nor the request itself) has a
 * `rateLimit` of its own. Otherwise (a request outside Express, or another library's property)
 * the adapter sets an own property, as plain code would.
 */
function usesAccessor(req: object): boolean {
  const prototype = Object.getPrototypeOf(req) as object | null;
  if (prototype === null) return false;
  if (!accessorPrototypes.has(prototype)) {
    if (!prepareAccessor(prototype)) return false;
    accessorPrototypes.add(prototype);
  }
  return !Object.hasOwn(req, 'rateLimit');
}

function prepareAccessor(prototype: object): boolean {
  // Express's request prototype is the last one before IncomingMessage.prototype, shared by every app of that Express.
  let base: object | null = prototype;
  while (base !== null && Object.getPrototypeOf(base) !== IncomingMessage.prototype) {
    if (Object.hasOwn(base, 'rateLimit')) return false;
    base = Object.getPrototypeOf(base) as object | null;
  }
  if (base === null) return false;
  const existing = Object.getOwnPropertyDescriptor(base, 'rateLimit');
  if (existing === undefined) Object.defineProperty(base, 'rateLimit', rateLimitAccessor);
  else if (existing.get !== rateLimitAccessor.get) return false;
  return true;
}

/**
 * Sets `req.rateLimit` to `result`. Returns true when no rl middleware has set it on this request
 * before (none wrote RateLimit headers on its response), false when one did, undefined when it cannot
 * tell (then the header writer looks at the response). When an earlier rl result was there, it is
 * handed to `doubleCount` (the double-count check of the middleware recording `result`).
 */
export function setRequestResult(
  req: Request,
  result: RateLimitResult,
  doubleCount: DoubleCountCheck,
): boolean | undefined {
  if (!usesAccessor(req)) {
    const earlier = req.rateLimit;
    req.rateLimit = result;
    if (earlier !== undefined) doubleCount.check(earlier, result);
    return undefined;
  }
  const earlier = results.get(req);
  results.set(req, result);
  if (earlier === undefined) return true;
  doubleCount.check(earlier, result);
  return false;
}
