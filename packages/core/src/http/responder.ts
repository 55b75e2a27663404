import type { HoldEvent } from '../observe/observer.js';
import type { Timers } from '../timers.js';
import type { HeaderWriter } from './headers.js';
import { holdRequest } from './hold.js';
import { overloadStatus } from './adaptive-admission.js';
import { ActualCosts } from './actual-cost.js';
import type { ActualCostFunction } from './option-types.js';
import { OutcomeCounter } from './outcome.js';
import type { ProblemBodies } from './problem.js';
import type { ResponseEnded, ResponseIO } from './response-io.js';
import type { RateLimitResult } from './result.js';

/** The outcome of a request whose response never finished, or answered an overload: its adaptive permit counts a failure. */
const FAILED = Object.freeze({ failed: true });

/** What the responder of a middleware needs of it, set once (see `HttpRateLimiter.response`). */
export interface ResponsePolicy {
  /** The header writer of the middleware. */
  readonly headers: HeaderWriter;
  /** Its default denial bodies. */
  readonly problems: ProblemBodies;
  /** The timers of its holds. */
  readonly timers: Timers;
  /** A limit is a concurrency limit: an admitted request's permits are released when its response ends. */
  readonly hasLeases: boolean;
  /** Give a request's units back when its response succeeded (`skipSuccessfulRequests`). */
  readonly skipSuccessful: boolean;
  /** Give a request's units back when its response failed or never finished (`skipFailedRequests`). */
  readonly skipFailed: boolean;
  /** Tells the observers of limit `limit` (the one that delays the request the longest) of a hold. */
  hold(limit: number, state: HoldEvent['state'], delayMs: number): void;
  /** Each limit's `actualCost` (undefined entries: none); undefined when no limit has one. */
  readonly actualCosts: readonly (ActualCostFunction<never, never> | undefined)[] | undefined;
}

/**
 * The one decision tree of every adapter, for the result of one request:
 *
 * - skipped (no result): proceed;
 * - otherwise record the result and write the headers (on a response written to; a Fetch adapter puts
 *   them on its answer itself, see {@link ResponseIO.headers}), then
 * - denied: the status (429, or 503 for a fail-closed store), and `onLimit` or the problem body (a
 *   dry-run denial goes on as admitted);
 * - the client gone while the limits ran: give everything back and drop the request;
 * - a delay (shaping): hold the request, then proceed, or drop it if the client leaves meanwhile;
 * - admitted: when its response ends (the adapter's `events.onEnd`), its concurrency permits are released,
 *   with `skipFailedRequests` or `skipSuccessfulRequests` its units are given back when its outcome
 *   is not counted (see {@link OutcomeCounter}), and a finished one that counts is settled at its
 *   real cost (`actualCost`); the request proceeds.
 *
 * What it asks of the response are events the adapter supplies (the client left, the end of the
 * response: see {@link ResponseIO}), not a Node response: on a Fetch runtime the answer is a value
 * and its end the end of its body; Node adapters hear both on their Node response.
 *
 * `respond` is synchronous except for a hold, so an adapter with a synchronous result continues in
 * the same tick.
 */
export class Responder<Req, Res, Next, Out> {
  private readonly policy: ResponsePolicy;
  /** Counting by outcome (`skipFailedRequests`, `skipSuccessfulRequests`); undefined when every request counts. */
  private readonly outcome: OutcomeCounter<Req, Res> | undefined;
  /** Settling from the response (`actualCost`); undefined when no limit has one. */
  private readonly actualCosts: ActualCosts<Req, Res> | undefined;
  /** The request holds something until its response ends (permits, units under counting by outcome, a cost to settle). */
  private readonly watchesEnd: boolean;

  /** `limiter`: the middleware (its {@link ResponsePolicy} is read once); `owner` names it in warnings. */
  constructor(
    limiter: { readonly response: ResponsePolicy },
    private readonly io: ResponseIO<Req, Res, Next, Out>,
    owner = 'rateLimit',
  ) {
    const policy = limiter.response;
    this.policy = policy;
    if (policy.skipFailed || policy.skipSuccessful) {
      const test = io.requestWasSuccessful ?? ((req: Req, res: Res) => io.statusCode(req, res) < 400);
      this.outcome = new OutcomeCounter(policy.skipSuccessful, policy.skipFailed, test, owner);
    }
    const functions = policy.actualCosts as readonly (ActualCostFunction<Req, Res> | undefined)[] | undefined;
    this.actualCosts = functions === undefined ? undefined : new ActualCosts(functions, io.lateError);
    this.watchesEnd = policy.hasLeases || this.outcome !== undefined || this.actualCosts !== undefined;
  }

  respond(req: Req, res: Res, next: Next, result: RateLimitResult | undefined): Out | Promise<Awaited<Out>> {
    const io = this.io;
    if (result === undefined) return io.proceed(req, res, next, undefined);
    const first = io.record(req, res, result);
    const headers = io.headers;
    if (headers !== undefined) this.policy.headers.write(headers, res, result, first);
    if (result.enforcedDeniedBy !== -1) {
      io.setStatus(req, res, result.statusCode);
      const onLimit = io.onLimit;
      return onLimit === undefined
        ? io.sendProblem(req, res, this.policy.problems.of(result))
        : onLimit(req, res, next, result);
    }
    // The client left while the limits ran: its leaving has passed, so give everything back now.
    if (io.events.clientLeft(req, res)) return io.drop(req, res, next, result.abandon());
    if (result.delayMs > 0) return this.holdThenProceed(req, res, next, result);
    return this.admit(req, res, next, result);
  }

  /**
   * The response of `result`'s admitted request ended (`finished`: sent in full): its permits are
   * released; a finished one whose outcome is not counted gives its units back (the estimate: it is
   * not settled), one that counts is settled at its real cost (`actualCost`, see {@link ActualCosts});
   * a response that never finished stays counted at its estimate (see {@link OutcomeCounter}). What an
   * adapter's `onEnd` tells.
   */
  readonly ended: ResponseEnded<Req, Res> = (req, res, result, finished) => {
    if (this.policy.hasLeases)
      void result.release(!finished || overloadStatus(this.io.statusCode(req, res)) ? FAILED : undefined);
    if (!finished) return;
    const actualCosts = this.actualCosts;
    if (this.outcome === undefined) void actualCosts?.settle(req, res, result);
    else
      this.outcome.finished(
        req,
        res,
        result,
        actualCosts === undefined ? undefined : () => void actualCosts.settle(req, res, result),
      );
  };

  private holdThenProceed(req: Req, res: Res, next: Next, result: RateLimitResult): Promise<Awaited<Out>> {
    const policy = this.policy;
    const io = this.io;
    const limit = longestDelay(result);
    policy.hold(limit, 'started', result.delayMs);
    // A client that leaves while held never reaches the next handler, and its slot is given back.
    return holdRequest((listener) => io.events.onClientLeave(req, res, listener), result.delayMs, policy.timers).then(
      (held) => {
        policy.hold(limit, held ? 'ended' : 'abandoned', result.delayMs);
        return held ? this.admit(req, res, next, result) : io.drop(req, res, next, result.abandon());
      },
    ) as Promise<Awaited<Out>>;
  }

  private admit(req: Req, res: Res, next: Next, result: RateLimitResult): Out {
    if (this.watchesEnd) this.io.events.onEnd(req, res, result, this.ended);
    return this.io.proceed(req, res, next, result);
  }
}

/** The index of the limit that delays `result` the longest (the one it is held for). */
function longestDelay(result: RateLimitResult): number {
  let longest = 0;
  const decisions = result.decisions;
  for (let i = 1; i < decisions.length; i++)
    if ((decisions[i]?.delayMs ?? 0) > (decisions[longest]?.delayMs ?? 0)) longest = i;
  return longest;
}
