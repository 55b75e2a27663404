import type { HeaderAccess } from './header-access.js';
import type { CloseNotifier } from './hold.js';
import type { SuccessTest } from './outcome.js';
import type { RateLimitResult } from './result.js';
import { emitWarning } from '../runtime.js';

/** The Node response behind a framework's response: whether the client is gone, and its `'close'`. */
export type NodeResponse = CloseNotifier;

/**
 * Told once when the response of an admitted request ends: `finished` true when it was sent in full,
 * false when it never finished (the client left, the connection broke).
 */
export type ResponseEnded<Req, Res> = (req: Req, res: Res, result: RateLimitResult, finished: boolean) => void;

/**
 * What a framework adapter does in its own idiom, for the `Responder`: `Req`, `Res` and `Next` are
 * the three values its middleware receives (Express `req, res, next`; Fastify `request, reply, done`;
 * Koa `ctx, ctx.res, next`), `Out` what it returns to the framework. One object per middleware:
 * nothing is allocated per request.
 */
export interface ResponseIO<Req, Res, Next, Out> {
  /** Reads and writes the headers of `res`. */
  readonly headers: HeaderAccess<Res>;
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
  /**
   * Tells `ended` once when the response of `result`'s admitted request ends. Asked only of a request
   * that holds something until then (a permit, or units under counting by outcome). Node adapters
   * use {@link endOnNodeClose} (the Node response's `'close'`); Fastify's route hooks
   * (`onResponse`, `onRequestAbort`) tell it where the plugin installed them.
   */
  onEnd(req: Req, res: Res, result: RateLimitResult, ended: ResponseEnded<Req, Res>): void;
  /**
   * Reports an error that comes after the response has finished (a bad `actualCost`), on the
   * framework's path for such errors: Fastify's request logger, Koa's app `'error'` event; Express,
   * which has none, a process warning carrying the error ({@link warnLateError}).
   */
  lateError(req: Req, res: Res, error: unknown): void;
}

/** {@link ResponseIO.lateError} for a framework without a path for errors after a response: the error as a process warning (`process.on('warning')` hears it with its `code`). */
export function warnLateError(_req: unknown, _res: unknown, error: unknown): void {
  emitWarning(error instanceof Error ? error : new Error(String(error)));
}

interface Watch {
  readonly req: unknown;
  readonly res: unknown;
  readonly result: RateLimitResult;
  readonly ended: ResponseEnded<unknown, unknown>;
}

/**
 * A {@link ResponseIO.onEnd} on the Node response of `res`: `ended` is told on its `'close'`,
 * finished when it was sent in full (`writableFinished`). One per middleware (its own slot and
 * listener on each response, so that two rl middlewares on one request each hear their own), one
 * small object per watched request and no closure.
 */
export function endOnNodeClose<Req, Res>(nodeResponse: (res: Res) => NodeResponse): (req: Req, res: Res, result: RateLimitResult, ended: ResponseEnded<Req, Res>) => void {
  const slot = Symbol('rl.ended');
  type Watched = NodeResponse & { [slot]?: Watch };
  function closed(this: Watched): void {
    const watch = this[slot];
    if (watch === undefined) return;
    this[slot] = undefined;
    watch.ended(watch.req, watch.res, watch.result, this.writableFinished === true);
  }
  return (req, res, result, ended) => {
    const node = nodeResponse(res) as Watched;
    node[slot] = { req, res, result, ended: ended as ResponseEnded<unknown, unknown> };
    node.once('close', closed);
  };
}
