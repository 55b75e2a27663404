import { InvalidOptionError } from '../errors.js';
import type { LimiterCore } from '../limiter/core.js';
import { checkActualCost } from '../limiter/settlement.js';
import type { Run } from './run.js';

/** What a settle of a run reads of its composition. */
export interface SettledComposition {
  readonly cores: readonly LimiterCore[];
  isConcurrencyLimit(i: number): boolean;
}

/**
 * Settles the rate limits of a finished run at the request's real cost: limit `i` at `actual[i]`
 * (undefined: that limit is not settled; each cost checked by the caller, see {@link actualPerLimit}),
 * each through its core's one settle (once per charge; a limit whose charge took nothing settles
 * nothing; a concurrency limit has no units to settle).
 * The run's cost of each settled limit becomes the lower of its estimate and its actual cost, what the
 * request is known to have been charged, so that a later give-back (counting by outcome) never
 * returns more than it took. Returns a promise that resolves once
 * every settle has (a failure is a `'storeError'` event, never a rejection), or `undefined` when all
 * were synchronous.
 */
export function settleRun(
  composition: SettledComposition,
  run: Run,
  actual: readonly (number | undefined)[],
): Promise<void> | undefined {
  const pending: Promise<void>[] = [];
  for (let i = 0; i < run.limits; i++) {
    const answer = run.answerOf(i);
    const charge = run.chargeOf(i);
    const cost = actual[i];
    if (answer === undefined || charge === undefined || cost === undefined || composition.isConcurrencyLimit(i))
      continue;
    const { first, done } = composition.cores[i]!.settle(charge, answer, cost);
    // What a later give-back returns: the store may have charged less than a higher actual cost (maxDebt,
    // a window that ended) or given back less of a lower one (what refilled since), so the lower of the
    // two, which it charged at least: a give-back never returns units the request did not take.
    if (first && cost < charge.cost) {
      run.setCharge(i, { ...charge, cost });
      run.costs[i] = cost;
    }
    if (done instanceof Promise) pending.push(done);
  }
  return pending.length === 0 ? undefined : Promise.all(pending).then(nothing);
}

/**
 * The real cost of a settle of `limits` limits, per limit: one number for each limit that `settles`
 * (every one when undefined), or one entry per limit (`undefined`: not settled). Each cost is checked
 * ({@link checkActualCost}) before anything is settled; a bad one throws its typed error.
 */
export function actualPerLimit(
  actual: unknown,
  limits: number,
  settles: readonly boolean[] | undefined,
  field: string,
): (number | undefined)[] {
  if (Array.isArray(actual)) {
    if (actual.length !== limits)
      throw new InvalidOptionError(
        field,
        actual,
        `a real cost (a number of 0 or more), or ${limits} of them, one per limit`,
      );
    return actual.map((cost: unknown) => (cost === undefined ? undefined : checkActualCost(cost)));
  }
  checkActualCost(actual);
  return Array.from({ length: limits }, (_, i) =>
    settles === undefined || settles[i] ? (actual as number) : undefined,
  );
}

function nothing(): void {}
