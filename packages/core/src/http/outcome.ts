import { InvalidOptionError, errorDocsUrl } from '../errors.js';
import type { RateLimitResult } from './result.js';
import { emitWarning } from '../runtime.js';

/**
 * Whether a finished response counts as a success for `skipFailedRequests` and
 * `skipSuccessfulRequests` (sync or async): the adapter's `requestWasSuccessful` called with the
 * framework's own objects, or the status below 400.
 */
export type SuccessTest<Req, Res> = (req: Req, res: Res) => unknown;

/**
 * Counting by the response's outcome: a request is charged when it arrives (so that concurrent
 * attempts are limited), and its units are given back when its response ends with an outcome that is
 * not counted: a success under `skipSuccessfulRequests`, a failure under `skipFailedRequests`. A
 * response that never finished (the client left, the connection broke) stays counted under both: its
 * handler may still be running, and a give-back at the abort would let a client that aborts every
 * request run any number of handlers past a limit meant to bound them. A success test
 * that throws or rejects counts the request (the safe side) and is reported once as a process warning
 * (`RL_OUTCOME_ERROR`): a response has been sent by then, so there is no error path left.
 */
export class OutcomeCounter<Req, Res> {
  private warned = false;

  constructor(
    private readonly skipSuccessful: boolean,
    private readonly skipFailed: boolean,
    private readonly wasSuccessful: SuccessTest<Req, Res>,
    private readonly owner: string,
  ) {}

  /**
   * The response of `result`'s request was sent in full: its success test decides whether it counts;
   * `counted` is called when it does (the request is then settled at its real cost, see `ActualCosts`).
   */
  finished(req: Req, res: Res, result: RateLimitResult, counted?: () => void): void {
    // An enforced denial took nothing.
    if (result.enforcedDeniedBy !== -1) return;
    let success: unknown;
    try {
      success = this.wasSuccessful(req, res);
    } catch (error) {
      this.warn(error);
      counted?.();
      return;
    }
    if (success instanceof Promise) {
      success.then(
        (value: unknown) => this.count(result, Boolean(value), counted),
        (error: unknown) => {
          this.warn(error);
          counted?.();
        },
      );
      return;
    }
    this.count(result, Boolean(success), counted);
  }

  private count(result: RateLimitResult, success: boolean, counted: (() => void) | undefined): void {
    if (success ? this.skipSuccessful : this.skipFailed) void result.giveBackUnits();
    else counted?.();
  }

  private warn(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    const message = error instanceof Error ? error.message : String(error);
    emitWarning(
      `requestWasSuccessful threw (${message}); the request stays counted. Make it return a boolean (or a promise of one) for every response. (rl ${this.owner}, warned once per middleware.) See ${errorDocsUrl('RL_OUTCOME_ERROR')}`,
      { code: 'RL_OUTCOME_ERROR' },
    );
  }
}

/**
 * The adapter option `requestWasSuccessful`, checked: undefined, or a function, and only with
 * `skipFailedRequests` or `skipSuccessfulRequests` (without them it would never be called).
 */
export function checkSuccessTest<F>(
  value: unknown,
  owner: string,
  counting: boolean,
  signature: string,
): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function')
    throw new InvalidOptionError(
      `${owner}.requestWasSuccessful`,
      value,
      `a function ${signature} returning a boolean (or a promise of one)`,
    );
  if (!counting) {
    throw new InvalidOptionError(
      `${owner}.requestWasSuccessful`,
      value,
      'no requestWasSuccessful without skipFailedRequests or skipSuccessfulRequests (it decides which of them applies)',
    );
  }
  return value as F;
}
