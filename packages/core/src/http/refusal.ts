import type { Algorithm } from '../algorithm.js';
import { algorithmIn, type Run } from '../compose/run.js';
import { makeDecision } from '../decision.js';
import { InvalidOptionError } from '../errors.js';
import type { LimiterCore } from '../limiter/core.js';
import { spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import { markBanned } from '../store/blocks.js';

/** How long `deny(req)`'s `true` denies: clients that follow Retry-After come back in an hour. */
export const DEFAULT_DENY_MS = 3_600_000;

/**
 * What the middleware's `deny(req)` answered, for `run` (its keys, costs and algorithms resolved): 0
 * to let the limits decide (`false`), else the ms the request is denied for (`true`: an hour; a
 * duration), with each limit's decision in `run` set to a ban's denial of that length under the
 * limit's policy (nothing charged, nothing asked of a store). Throws `InvalidOptionError` for any
 * other answer (through the framework's error path; no limit was charged).
 */
export function refusal(answer: unknown, run: Run, limits: readonly { readonly core: LimiterCore }[]): number {
  if (answer === false) return 0;
  const ms =
    answer === true
      ? DEFAULT_DENY_MS
      : typeof answer === 'number' || typeof answer === 'string'
        ? spanOption(answer, 'deny(req)')
        : undefined;
  if (ms === undefined) throw new InvalidOptionError('deny(req)', answer, "true, false or a duration such as '10m'");
  warnShortSpan(answer, 'deny(req)');
  const now = Date.now();
  limits.forEach(({ core }, i) => {
    const algorithm: Algorithm = algorithmIn(run, i, core.algorithm);
    const decision = markBanned(
      makeDecision({
        allowed: false,
        limit: algorithm.limit,
        remaining: 0,
        resetMs: ms,
        retryAfterMs: ms,
        delayMs: 0,
        policy: algorithm.policyAt?.(now) ?? algorithm.policy,
        at: now,
      }),
    );
    run.answered(i, { decision, took: 'nothing' });
  });
  return ms;
}
