import type { HeaderAccess } from './header-access.js';
import type { SuccessTest } from './outcome.js';
import type { RateLimitResult } from './result.js';
import { emitWarning } from '../runtime.js';

/**
 * Told once when the response of an admitted request ends: `finished` true when it was sent in full,
 * false when it never finished (the client left, the connection broke).
 */
export type ResponseEnded<Req, Res> = (req: Req, res: Res, result: RateLimitResult, finished: boolean) => void;

/**
 * What a framework adapter does in its own idiom, for the `Responder`: `Req`, `Res` and `Next` are
 * the three values its middleware receives (Express `req, res, next`; Fastify `request, reply, done`;
 * Koa `ctx, ctx.res, next`; on a Fetch runtime the request or Hono's `c`, the answer being made, and
 * `next` or the handler's arguments), `Out` what it returns to the framework. One object per
 * middleware.
 *
 * The Responder asks for events, never for a Node response: whether the client has left and a
 * listener for its leaving ({@link clientLeft}, {@link onClientLeave}), and the end of an admitted
 * request's response ({@link onEnd}). A Fetch runtime has them from the request's `AbortSignal` and
 * the end of the response's body (`FetchAnswer`); a Node adapter from its Node response
 * (`nodeResponseEvents`), as `@hono/node-server` adapts Node to the Fetch API.
 */
export interface ResponseIO<Req, Res, Next, Out> {
  /**
   * Reads and writes the headers of `res`, where the Responder writes them before the request goes on:
   * a response written to, as Node's (its headers go before its body). Undefined for an adapter that
   * puts them on its answer itself once it has one: on a Fetch runtime the response is a value the rest
   * of the chain returns, and each rl middleware writes beneath the headers of those inside it
   * (`HeaderWriter.writeBeneath`).
   */
  readonly headers: HeaderAccess<Res> | undefined;
  /** True once the client of the request is gone (it closed the connection before the response). */
  clientLeft(req: Req, res: Res): boolean;
  /** Tells `listener` once if the client of the request leaves; returns what stops listening. Asked only to hold a request. */
  onClientLeave(req: Req, res: Res, listener: () => void): () => void;
  /** The status code of a finished response (the default success test: below 400). */
  statusCode(req: Req, res: Res): number;
  /** The user's `requestWasSuccessful`, called with the framework's own objects; undefined: the status decides. */
  readonly requestWasSuccessful: SuccessTest<Req, Res> | undefined;
  /**
   * Puts the result where handlers read it (`req.rateLimit`, …). Returns `first` for the header
   * writer (see `HeaderWriter.write`): true when no rl middleware wrote on this response before,
   * false when one did, undefined when the adapter cannot tell (or writes the headers itself).
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
   * Tells `ended` once when the response of `result`'s admitted request ends: sent in full, or, when
   * its client left first, once its handler's work is over (a permit guards the work, not the
   * connection). Asked only of a request that holds something until then (a permit, units under
   * counting by outcome, a cost to settle). Node adapters use `nodeResponseEvents`; the Fetch ones
   * the `FetchAnswer` of the request (the end of the response's body).
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
