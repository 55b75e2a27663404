import type { ActualCostFunction } from './option-types.js';
import type { RateLimitResult } from './result.js';

/** The answer of a limit without `actualCost`. */
const NONE: unique symbol = Symbol('rl.noActualCost');

/** Where an error that comes after the response goes: the framework's own path for it (see `ResponseIO.lateError`). */
export type LateErrorReport<Req, Res> = (req: Req, res: Res, error: unknown) => void;

/**
 * Settling from the response: once the response of an admitted request has finished, each limit's
 * `actualCost` (undefined entries: none) is called with the framework's own objects, and the request's
 * result is settled at what they return (see `RateLimitResult.settle`), unless the handler settled it
 * itself. A function that throws, rejects or returns a bad cost settles nothing (the estimates stand)
 * and its `InvalidCostError` (or its own error) is reported on the framework's path for late errors.
 * A response that never finished (the client left) is not settled: its estimate stands.
 */
export class ActualCosts<Req, Res> {
  private readonly report: LateErrorReport<Req, Res>;

  constructor(
    private readonly functions: readonly (ActualCostFunction<Req, Res> | undefined)[],
    report: LateErrorReport<Req, Res>,
  ) {
    // Always an Error (Koa's 'error' handler throws for anything else), and a report that throws never escapes a response's 'close'.
    this.report = (req, res, error) => {
      try {
        report(
          req,
          res,
          error instanceof Error ? error : new Error(`actualCost failed: ${String(error)}`, { cause: error }),
        );
      } catch {
        // The framework's own error path failed: nothing is left to tell.
      }
    };
  }

  /** Settles `result` from its finished response; a promise that resolves once it is done (never rejects), or undefined when nothing was asynchronous. */
  settle(req: Req, res: Res, result: RateLimitResult): Promise<void> | undefined {
    if (result.settled || result.enforcedDeniedBy !== -1) return undefined;
    let answers: unknown[];
    try {
      answers = this.functions.map((actualCost) => (actualCost === undefined ? NONE : actualCost(req, res)));
    } catch (error) {
      this.report(req, res, error);
      return undefined;
    }
    if (!answers.some((answer) => answer instanceof Promise)) return this.settleWith(req, res, result, answers);
    return Promise.all(answers).then(
      (costs) => this.settleWith(req, res, result, costs),
      (error: unknown) => this.report(req, res, error),
    );
  }

  private settleWith(
    req: Req,
    res: Res,
    result: RateLimitResult,
    costs: readonly unknown[],
  ): Promise<void> | undefined {
    // The handler may have settled while an asynchronous actualCost ran.
    if (result.settled) return undefined;
    try {
      // `result.settle` checks each cost (one rule, `checkActualCost`) before anything is settled.
      return result.settle(costs.map((cost) => (cost === NONE ? undefined : cost)) as (number | undefined)[]);
    } catch (error) {
      this.report(req, res, error);
      return undefined;
    }
  }
}
