import { errorDocsUrl } from '../errors.js';
import { emitWarning } from '../runtime.js';

/**
 * Double-count detection: two rl middlewares whose limits share a name both ran on one request (as
 * express-rate-limit's `ERR_ERL_DOUBLE_COUNT`). The usual cause is an app-wide limit plus a route
 * middleware with the same options to change the cost, `app.get('/export', rateLimit({ ...same, cost: () => 5 }))`:
 * that is a second limit with its own state, so the request takes 1 from the first and 5 from the
 * second, and the headers list the same policy twice. The fix is one limit with a cost by route.
 *
 * Each middleware's results are tagged with the middleware that produced them (a symbol property);
 * an adapter, when it records a result on a request that already carries an earlier rl result, asks
 * {@link DoubleCountCheck.check}. Nothing runs on a request that only one rl middleware sees.
 */

/** What a result remembers of the middleware that produced it: its limits' names (the names the headers list). */
export interface ResultSource {
  readonly limitNames: readonly string[];
}

/** The warning's code, in the message and as the process warning's `code`. */
export const DOUBLE_COUNT_CODE = 'RL_DOUBLE_COUNT';

const SOURCE: unique symbol = Symbol('rl.source');
/** On a result recorded over an earlier one: that earlier result (the chain of every rl result of the request). */
const EARLIER: unique symbol = Symbol('rl.earlier');

interface Tagged {
  [SOURCE]?: ResultSource;
  [EARLIER]?: Tagged;
}

/** Marks `result` as produced by the middleware `source` (in `RateLimitResult`'s constructor: see there). */
export function tagResult<R extends object>(result: R, source: ResultSource): R {
  (result as Tagged)[SOURCE] = source;
  return result;
}

/**
 * The double-count check of one middleware. Warns (a process warning with code `RL_DOUBLE_COUNT`,
 * printed on stderr by Node unless the app listens to `'warning'`) once per pair of middlewares, an
 * earlier one and this one, the first time both ran on one request with a limit of the same name.
 * A middleware that runs twice on one request (mounted twice) is such a pair too.
 */
export class DoubleCountCheck {
  /** Earlier middlewares already warned about. */
  private readonly warned = new WeakSet<ResultSource>();

  constructor(private readonly self: ResultSource) {}

  /**
   * `earlier`: what the request carried before this middleware recorded `current` (the last earlier
   * rl result, which links to the ones before it). Compares this middleware's limit names with every
   * earlier rl result's middleware, and links `current` to `earlier` for the next middleware.
   */
  check(earlier: unknown, current: object): void {
    if (typeof earlier !== 'object' || earlier === null) return;
    (current as Tagged)[EARLIER] = earlier as Tagged;
    for (let result: Tagged | undefined = earlier as Tagged; result !== undefined; result = result[EARLIER]) {
      const source = result[SOURCE];
      if (source === undefined || this.warned.has(source)) continue;
      const shared = this.self.limitNames.filter((name) => source.limitNames.includes(name));
      if (shared.length === 0) continue;
      this.warned.add(source);
      emitWarning(doubleCountMessage(shared, source === this.self), { code: DOUBLE_COUNT_CODE });
    }
  }
}

function doubleCountMessage(names: readonly string[], sameMiddleware: boolean): string {
  const list = names.map((name) => `"${name}"`).join(', ');
  const what = sameMiddleware
    ? `The same rl middleware (limit ${list}) ran twice on one request: it was mounted twice, so each request is counted twice.`
    : `Two rl middlewares with the limit ${list} both ran on one request: each has its own state, so the request is counted by both and the RateLimit headers list ${list} twice.`;
  return `${DOUBLE_COUNT_CODE}: ${what} Use one limit, with a cost by route (cost: (req) => (req.path === '/export' ? 5 : 1)) instead of a second middleware with the same options; or, if the two limits are meant to be separate, give them distinct names (limits: [{ name, algorithm }]). See ${errorDocsUrl(DOUBLE_COUNT_CODE)}`;
}
