import type { HeaderAccess } from './headers.js';
import { holdRequest, type CloseNotifier } from './hold.js';
import { OutcomeCounter, type SuccessTest } from './outcome.js';
import { reportObserverError } from '../limiter/observation.js';
import type { HoldEvent, Observer } from '../observe/observer.js';
import type { HttpRateLimiter } from './rate-limiter.js';
import type { RateLimitResult } from './result.js';

/** The Node response behind a framework's response: whether the client is gone, and its `'close'`. */
export type NodeResponse = CloseNotifier;

/**
 * What a framework adapter does in its own idiom, for {@link Responder}: `Req`, `Res` and `Next` are
 * the three values its middleware receives (Express `req, res, next`; Fastify `request, reply, done`;
 * Koa `ctx, ctx.res, next`), `Out` what it returns to the framework. One object per middleware:
 * nothing is allocated per request.
 */
export interface ResponseIO<Req, Res, Next, Out> {
  /** Reads and writes the headers of `res`. */
  readonly headers: HeaderAccess<Res>;
  /**
   * Releases a concurrency permit when the Node response closes. False for an adapter that releases
   * through the framework's own hooks (it calls `result.release()` itself).
   */
  readonly releaseOnClose: boolean;
  /** The Node response of `res`. */
  nodeResponse(res: Res): NodeResponse;
  /** The status code of a finished response (the default success test: below 400). */
  statusCode(req: Req, res: Res): number;
  /** The user's `requestWasSuccessful`, called with the framework's own objects; undefined: the status decides. */
  readonly requestWasSuccessful: SuccessTest<Req, Res> | undefined;
  /**
   * Puts the result where handlers read it (`req.rateLimit`, …). Returns `first` for the header
   * writer (see `HeaderWriter.write`): true when no rl middleware wrote on this response before,
   * false when one did, undefined when the adapter cannot tell.
   */
  record(req: Req, res: Res, result: RateLimitResult): boolean | undefined;
  /** Continues with the next handler: no limit applies (`result` undefined, skipped) or the request was admitted. */
  proceed(req: Req, res: Res, next: Next, result: RateLimitResult | undefined): Out;
  /** Sets the status code of a denial. */
  setStatus(req: Req, res: Res, statusCode: number): void;
  /** Sends the default denial body, a problem+json document (`PROBLEM_CONTENT_TYPE`). */
  sendProblem(req: Req, res: Res, body: string): Out;
  /** The user's denial handler, when the options gave one (then it is called instead of {@link sendProblem}). */
  readonly onLimit: ((req: Req, res: Res, next: Next, result: RateLimitResult) => Out) | undefined;
  /**
   * The client left before the request proceeded: `givenBack` settles once what it took was given
   * back. Ends the request without a response and without the next handler.
   */
  drop(req: Req, res: Res, next: Next, givenBack: Promise<void>): Out;
}

/**
 * The one decision tree of every adapter, for the result of one request:
 *
 * - skipped (no result): proceed;
 * - otherwise record the result and write the headers, then
 * - denied: the status (429, or 503 for a fail-closed store), and `onLimit` or the problem body (a
 *   dry-run denial goes on as admitted);
 * - the client gone while the limits ran: give everything back and drop the request;
 * - a delay (shaping): hold the request, then proceed, or drop it if the client leaves meanwhile;
 * - admitted: a concurrency permit is released when the response closes, and the request proceeds;
 *   with `skipFailedRequests` or `skipSuccessfulRequests`, its units are given back when the response
 *   ends with an outcome that is not counted (see {@link OutcomeCounter}).
 *
 * `respond` is synchronous except for a hold, so an adapter with a synchronous result continues in
 * the same tick.
 */
export class Responder<Req, Res, Next, Out> {
  /** Where the result of a request that holds permits is kept on its Node response, for {@link releaseOnClose}. */
  private readonly slot = Symbol('rl.rateLimit');
  private readonly releasesOnClose: boolean;
  /** The `'close'` listener of every response that holds permits: one function per middleware, not one closure per request. */
  private readonly releaseOnClose: () => void;
  /** Counting by outcome (`skipFailedRequests`, `skipSuccessfulRequests`); undefined when every request counts. */
  private readonly outcome: OutcomeCounter<Req, Res> | undefined;

  constructor(
    private readonly limiter: HttpRateLimiter<Req>,
    private readonly io: ResponseIO<Req, Res, Next, Out>,
    owner = 'rateLimit',
  ) {
    this.releasesOnClose = limiter.hasLeases && io.releaseOnClose;
    if (limiter.skipFailed || limiter.skipSuccessful) {
      const test = io.requestWasSuccessful ?? ((req: Req, res: Res) => io.statusCode(req, res) < 400);
      this.outcome = new OutcomeCounter(limiter.skipSuccessful, limiter.skipFailed, test, owner);
    }
    const slot = this.slot;
    this.releaseOnClose = function releaseOnClose(this: object): void {
      void (this as Record<symbol, RateLimitResult>)[slot]!.release();
    };
  }

  respond(req: Req, res: Res, next: Next, result: RateLimitResult | undefined): Out | Promise<Awaited<Out>> {
    const io = this.io;
    if (result === undefined) return io.proceed(req, res, next, undefined);
    this.limiter.headers.write(io.headers, res, result, io.record(req, res, result));
    if (result.enforcedDeniedBy !== -1) {
      io.setStatus(req, res, result.statusCode);
      const onLimit = io.onLimit;
      return onLimit === undefined ? io.sendProblem(req, res, this.limiter.problems.of(result)) : onLimit(req, res, next, result);
    }
    const node = io.nodeResponse(res);
    // The client left while the limits ran: its 'close' has passed, so give everything back now.
    if (node.destroyed === true) return io.drop(req, res, next, result.abandon());
    if (result.delayMs > 0) return this.holdThenProceed(req, res, next, result, node);
    return this.admit(req, res, next, result, node);
  }

  private holdThenProceed(req: Req, res: Res, next: Next, result: RateLimitResult, node: NodeResponse): Promise<Awaited<Out>> {
    const observer = this.limiter.observer;
    const limit = observer?.hold === undefined ? undefined : this.limiter.limitNames[longestDelay(result)]!;
    if (limit !== undefined) this.tellHold(observer!, limit, 'started', result.delayMs);
    // A client that leaves while held never reaches the next handler, and its slot is given back.
    return holdRequest(node, result.delayMs, this.limiter.timers).then((held) => {
      if (limit !== undefined) this.tellHold(observer!, limit, held ? 'ended' : 'abandoned', result.delayMs);
      return held ? this.admit(req, res, next, result, node) : this.io.drop(req, res, next, result.abandon());
    }) as Promise<Awaited<Out>>;
  }

  private tellHold(observer: Observer, limit: string, state: HoldEvent['state'], delayMs: number): void {
    try {
      observer.hold!({ limit, state, delayMs });
    } catch (error) {
      reportObserverError(observer, error);
    }
  }

  private admit(req: Req, res: Res, next: Next, result: RateLimitResult, node: NodeResponse): Out {
    const outcome = this.outcome;
    if (outcome !== undefined && this.io.releaseOnClose) {
      // The outcome needs the framework's objects: one listener per request, only with counting by outcome.
      const releases = this.releasesOnClose;
      node.once('close', () => {
        if (releases) void result.release();
        if (node.writableFinished === true) outcome.finished(req, res, result);
        else outcome.unfinished(result);
      });
    } else if (this.releasesOnClose) {
      (node as unknown as Record<symbol, RateLimitResult>)[this.slot] = result;
      node.once('close', this.releaseOnClose);
    }
    return this.io.proceed(req, res, next, result);
  }

  /**
   * For an adapter that hears of the end of a response through the framework's own hooks
   * (`releaseOnClose: false`): the response of `result`'s request was sent in full (Fastify's
   * `onResponse`). Gives the units back when its outcome is not counted; does nothing without
   * counting by outcome.
   */
  finished(req: Req, res: Res, result: RateLimitResult): void {
    this.outcome?.finished(req, res, result);
  }

  /** As {@link finished}, for a response that never finished (Fastify's `onRequestAbort`): a failure. */
  unfinished(result: RateLimitResult): void {
    this.outcome?.unfinished(result);
  }

  /** True when the adapter must report each response's end ({@link finished}, {@link unfinished}): counting by outcome is on. */
  get countsOutcome(): boolean {
    return this.outcome !== undefined;
  }
}

/** The index of the limit that delays `result` the longest (the one it is held for). */
function longestDelay(result: RateLimitResult): number {
  let longest = 0;
  const decisions = result.decisions;
  for (let i = 1; i < decisions.length; i++) if ((decisions[i]?.delayMs ?? 0) > (decisions[longest]?.delayMs ?? 0)) longest = i;
  return longest;
}
