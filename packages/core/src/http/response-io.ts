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
   * Tells `ended` once when the response of `result`'s admitted request ends: sent in full, or, when
   * its client left first, once its handler's work is over (a permit guards the work, not the
   * connection). Asked only of a request that holds something until then (a permit, units under
   * counting by outcome, a cost to settle). Node adapters use {@link nodeResponseEnds}; the Fetch ones
   * the request's `FetchExchange`.
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

/** The events and state of a Node `ServerResponse` that tell how it ended (see {@link nodeResponseEnds}). */
export interface EndingResponse extends NodeResponse {
  on(event: 'finish' | 'close' | 'prefinish', listener: () => void): unknown;
  removeListener(event: 'finish' | 'close' | 'prefinish', listener: () => void): unknown;
  /** True once the response has been ended (`res.end()` was called), sent in full or not. */
  readonly writableEnded?: boolean;
}

/** Where a watched request is: its handler runs, its handler is done, or its client left while its handler ran. */
const RUNNING = 0;
const WORK_DONE = 1;
const LEFT = 2;

interface Watch {
  readonly req: unknown;
  readonly res: unknown;
  readonly result: RateLimitResult;
  readonly ended: ResponseEnded<unknown, unknown>;
  phase: typeof RUNNING | typeof WORK_DONE | typeof LEFT;
}

/** How a middleware hears the end of its responses on the Node response (see {@link nodeResponseEnds}). */
export interface NodeResponseEnds<Req, Res> {
  /** The {@link ResponseIO.onEnd} of the middleware. */
  readonly onEnd: (req: Req, res: Res, result: RateLimitResult, ended: ResponseEnded<Req, Res>) => void;
  /**
   * The handler of the request on `res` is done (Koa's downstream returned or threw; Fastify's route
   * handler's promise settled), for a framework where a handler may finish without ending a response
   * whose client has gone. Nothing when the request is not watched.
   */
  readonly workDone: (res: Res) => void;
}

/**
 * Hears the end of an admitted request's response on its Node response (`res`'s, through
 * `nodeResponse`), for {@link ResponseIO.onEnd}: `ended` is told once,
 *
 * - finished, at `'finish'`: the response was sent in full. (The event, not `writableFinished`: under
 *   Fastify's `inject()` the fake socket is still flushing when `'close'` comes.)
 * - not finished, at `'close'` without `'finish'` (the client left, the connection broke), once the
 *   handler's work is over: at once when the handler has ended the response (`writableEnded`) or is
 *   done ({@link NodeResponseEnds.workDone}); otherwise when it ends the response later (`res.end()`
 *   on the closed response emits `'prefinish'`: Express, Nest, Fastify's reply) or says it is done.
 *   A concurrency permit guards the work, not the connection: a client that leaves frees nothing
 *   sooner, and the permit's lease bounds a handler that never ends.
 *
 * One per middleware (its own slot and listeners on each response, so that two rl middlewares on one
 * request each hear their own), one small record per watched request and no closure.
 */
export function nodeResponseEnds<Req, Res>(nodeResponse: (res: Res) => EndingResponse): NodeResponseEnds<Req, Res> {
  const slot = Symbol('rl.ended');
  type Watched = EndingResponse & { [slot]?: Watch };
  function tell(node: Watched, finished: boolean): void {
    const watch = node[slot];
    if (watch === undefined) return;
    node[slot] = undefined;
    node.removeListener('finish', sent);
    node.removeListener('close', closed);
    if (watch.phase === LEFT) node.removeListener('prefinish', answered);
    watch.ended(watch.req, watch.res, watch.result, finished);
  }
  function sent(this: Watched): void {
    tell(this, true);
  }
  function closed(this: Watched): void {
    const watch = this[slot];
    if (watch === undefined) return;
    if (watch.phase === WORK_DONE || this.writableEnded === true) return tell(this, false);
    // The client left while the handler runs: its end comes later. (light-my-request's `end()` emits
    // 'finish' even on a closed response: it would be taken for a response sent in full.)
    watch.phase = LEFT;
    this.removeListener('finish', sent);
    this.on('prefinish', answered);
  }
  function answered(this: Watched): void {
    tell(this, false);
  }
  return {
    onEnd: (req, res, result, ended) => {
      const node = nodeResponse(res) as Watched;
      node[slot] = { req, res, result, ended: ended as ResponseEnded<unknown, unknown>, phase: RUNNING };
      node.on('finish', sent);
      node.on('close', closed);
    },
    workDone: (res) => {
      const node = nodeResponse(res) as Watched;
      const watch = node[slot];
      if (watch === undefined) return;
      if (watch.phase === LEFT) tell(node, false);
      else watch.phase = WORK_DONE;
    },
  };
}
