// Node adapted to the Responder's events, as `@hono/node-server` adapts Node to the Fetch API: the
// client leaving and the end of a response, heard on a Node `ServerResponse` (Express, Koa, Fastify's
// `reply.raw`, Nest on either platform).
import type { ResponseEnded, ResponseEvents } from './response-io.js';
import type { RateLimitResult } from './result.js';

/** The events and state of a Node `ServerResponse` that tell whether its client left and how it ended. */
export interface NodeResponse {
  on(event: 'finish' | 'close' | 'prefinish', listener: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'finish' | 'close' | 'prefinish', listener: () => void): unknown;
  /** True once the connection is gone (the client left, or the response was destroyed). */
  readonly destroyed?: boolean;
  /** True once the response has been ended (`res.end()` was called), sent in full or not. */
  readonly writableEnded?: boolean;
  /** True once the response's head was written: the handler has reached its response. */
  readonly headersSent?: boolean;
  /** The error the response was destroyed with (`res.destroy(error)`, a failed `pipeline`), else null or undefined. */
  readonly errored?: unknown;
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

/** The events of a middleware's `ResponseIO`, heard on the Node response of each request (see {@link nodeResponseEvents}). */
export interface NodeResponseEvents<Req, Res> extends ResponseEvents<Req, Res> {
  /**
   * The handler of the request on `res` is done (Koa's downstream returned or threw; Fastify's route
   * handler's promise settled), for a framework where a handler may finish without ending a response
   * whose client has gone. Nothing when the request is not watched.
   */
  readonly workDone: (res: Res) => void;
}

/**
 * The Responder's events on the Node response of each request (`nodeResponse(res)`):
 *
 * - the client left: the Node response is `destroyed`, and its `'close'` (for a hold);
 * - the end of an admitted request's response ({@link ResponseEvents.onEnd}): `ended` is told once,
 *   - finished, at `'finish'`: the response was sent in full. (The event, not `writableFinished`:
 *     under Fastify's `inject()` the fake socket is still flushing when `'close'` comes.)
 *   - not finished, at `'close'` without `'finish'` (the client left, the connection broke), once the
 *     handler's work is over: at once when the handler has ended the response (`writableEnded`), is
 *     done ({@link NodeResponseEvents.workDone}), has begun its response (`headersSent`: what is left
 *     is the writing, which the closed connection ends) or the response was destroyed with an error
 *     (`errored`: a streamed body failed); otherwise when it ends the response later (`res.end()` on
 *     the closed response emits `'prefinish'`: Express, Nest, Fastify's reply) or says it is done.
 *     A concurrency permit guards the work, not the connection: a client that leaves frees nothing
 *     sooner, and the permit's lease bounds a handler that never ends.
 *
 * One per middleware (its own slot and listeners on each response, so that two rl middlewares on one
 * request each hear their own), one small record per watched request and no closure.
 */
export function nodeResponseEvents<Req, Res>(nodeResponse: (res: Res) => NodeResponse): NodeResponseEvents<Req, Res> {
  const slot = Symbol('rl.ended');
  type Watched = NodeResponse & { [slot]?: Watch };
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
    // The handler's work is over when it ended the response or said so; and once the response has
    // begun (its head written) or was destroyed with an error by the server's own side (a streamed
    // body that failed: `pipeline` destroys the response), its work is the writing, which the closed
    // connection ends: waiting for an end that never comes held a permit for its whole lease.
    if (
      watch.phase === WORK_DONE ||
      this.writableEnded === true ||
      this.headersSent === true ||
      (this.errored !== null && this.errored !== undefined)
    )
      return tell(this, false);
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
    clientLeft: (_req, res) => nodeResponse(res).destroyed === true,
    onClientLeave: (_req, res, listener) => {
      const node = nodeResponse(res);
      node.once('close', listener);
      return () => void node.removeListener('close', listener);
    },
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
