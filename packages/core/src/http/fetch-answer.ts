import { fetchHeaderAccess } from './header-access.js';
import type { HeaderWriter } from './headers.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import type { ResponseEnded } from './response-io.js';
import type { RateLimitResult } from './result.js';

/** The parts of a Fetch `Request` an answer reads. */
export interface FetchRequest {
  /** Aborted by the runtime when the client goes; read only for a hold or a watch. */
  readonly signal?: AbortSignal;
  readonly method?: string;
}

interface EndWatch {
  readonly req: unknown;
  readonly result: RateLimitResult;
  readonly ended: ResponseEnded<unknown, FetchAnswer>;
  /** The listener of the request's abort while watched. */
  readonly left: () => void;
}

/**
 * The answer of one rl middleware to one request on a Fetch runtime (Hono, `Bun.serve`, `Deno.serve`,
 * Workers, a Next.js route handler), where a response is a value the rest of the chain returns, not an
 * object written to. One per request and middleware: two rl middlewares on one request each have
 * their own, and each writes on the response the one inside it returned.
 *
 * - The answer: {@link respond} takes the response of the rest of the chain, {@link deny} makes a
 *   denial's; each gets the middleware's headers, beneath those of the rl middlewares that ran inside
 *   it (`HeaderWriter.writeBeneath`), on a copy when its headers are immutable (a `fetch()` response).
 * - The client leaving: the request's `AbortSignal` (every Fetch runtime aborts it when the client
 *   goes), for holds ({@link onLeave}) and for the check before admitting ({@link clientLeft}).
 * - The end of the response: once {@link watch}ed, {@link respond} wraps the body, and the watcher
 *   hears `finished` true when the body was read to its end (or there is none), false when it was
 *   cancelled or the client left while it streamed. A client that leaves while the handler runs is
 *   heard when the handler answers or throws (not finished): a permit guards the work, not the
 *   connection. A handler that threw with its client there is a finished 500 ({@link failed}).
 */
export class FetchAnswer {
  /** The status of the answer: a denial's, set before it is made, then the status of the response it answers with (0 before). */
  status = 0;
  /** The response this middleware answered with (undefined before; the runtime's 500 when the handler threw, see {@link failed}). */
  response: Response | undefined = undefined;
  private watching: EndWatch | undefined = undefined;

  /**
   * `request`: the request, whose `signal` is read only when a hold or a watch needs it (making one
   * costs `@hono/node-server` an `AbortController` per request); `result`: the middleware's result for
   * it (undefined: skipped, no headers); `writer`: the middleware's header writer; `connection`:
   * where the runtime has one, the Node response under it (`@hono/node-server`'s `outgoing`), whose
   * `destroyed` tells that the client left without the signal.
   */
  constructor(
    private readonly request: FetchRequest,
    private readonly result: RateLimitResult | undefined,
    private readonly writer: HeaderWriter,
    private readonly connection?: { readonly destroyed?: boolean },
  ) {}

  /** True once the client is gone. */
  get clientLeft(): boolean {
    const connection = this.connection;
    if (connection !== undefined) return connection.destroyed === true;
    return this.request.signal?.aborted === true;
  }

  /** Tells `listener` once if the client leaves (the request's abort); returns what stops listening. Nothing where the runtime gives no signal. */
  onLeave(listener: () => void): () => void {
    const signal = this.request.signal;
    if (signal === undefined) return noop;
    signal.addEventListener('abort', listener, { once: true });
    return () => signal.removeEventListener('abort', listener);
  }

  /**
   * Tells `ended` once when the response of `req`'s admitted request ends (see {@link respond}); not
   * finished when its client left, as soon as it leaves while the body streams, and when the handler
   * answers or throws when it left before (the handler's work is what a permit guards).
   */
  watch<Req>(req: Req, result: RateLimitResult, ended: ResponseEnded<Req, FetchAnswer>): void {
    // The client left: while the body streams, the response ends unfinished now; while the handler
    // runs, when it answers ({@link respond}, {@link failed}). Made only for a watched answer.
    const left = (): void => {
      if (this.response !== undefined) this.end(false);
    };
    this.watching = { req, result, ended: ended as ResponseEnded<unknown, FetchAnswer>, left };
    this.request.signal?.addEventListener('abort', left, { once: true });
  }

  /**
   * A denial's response: the status set ({@link status}), the headers and `body` as problem+json (or,
   * with `body` a `Response` from an `onLimit`, that response with the headers added).
   */
  deny(body: string | Response): Response {
    const status = this.status;
    let response: Response;
    if (typeof body === 'string')
      response = new Response(body, { status, headers: { 'content-type': PROBLEM_CONTENT_TYPE } });
    // A denial is never a success: an `onLimit` response left at 200 (`Response.json(...)`'s default) gets the denial's status.
    else response = body.status < 300 ? new Response(body.body, { status, headers: body.headers }) : body;
    return this.respond(response);
  }

  /**
   * The handler threw instead of answering: the runtime answers 500 (Bun, Deno, Workers, Node's
   * servers), so a watcher hears of a finished response with that status, as a Node framework's error
   * handler sends one; not finished when the client has left.
   */
  failed(): void {
    if (this.watching === undefined) return;
    this.status = 500;
    this.response = new Response(null, { status: 500 });
    this.end(!this.clientLeft);
  }

  /**
   * `response` answered with this middleware's headers (on a copy when its headers are immutable, as
   * a `fetch()` response's are); when a watcher waits for the end, with a body that tells it.
   */
  respond(response: Response): Response {
    const out = this.result === undefined ? response : this.withHeaders(response, this.result);
    this.status = out.status;
    this.response = out;
    if (this.watching === undefined) return out;
    // The client left while the handler ran: nobody will read the body, and the handler's work is over.
    if (this.clientLeft) {
      this.end(false);
      return out;
    }
    const body = out.body;
    // A HEAD response sends no body (Hono answers `new Response(null, ...)` over the GET route's, whose
    // body is then never read): its end is now. So is a body already being read: the response was
    // answered before the handler returned (hono/timeout's 504, sent while the handler ran on), and
    // no later reader can wrap it.
    if (body === null || this.request.method === 'HEAD' || body.locked || out.bodyUsed) {
      this.end(true);
      return out;
    }
    this.response = new Response(this.watched(body), out);
    return this.response;
  }

  /**
   * `response` with the headers of `result` written beneath those already on it: on it, or on a copy
   * when its headers are immutable (a `fetch()` response). A response no copy can be made of (a
   * WebSocket upgrade's 101, a body already read) keeps the original without them.
   */
  private withHeaders(response: Response, result: RateLimitResult): Response {
    try {
      this.writer.writeBeneath(fetchHeaderAccess, response.headers, result);
      return response;
    } catch {
      let copy: Response;
      try {
        copy = new Response(response.body, response);
      } catch {
        return response;
      }
      this.writer.writeBeneath(fetchHeaderAccess, copy.headers, result);
      return copy;
    }
  }

  /** Tells the watcher once: `finished` true when the response was sent in full. */
  private end(finished: boolean): void {
    const watch = this.watching;
    if (watch === undefined) return;
    this.watching = undefined;
    this.request.signal?.removeEventListener('abort', watch.left);
    watch.ended(watch.req, this, watch.result, finished);
  }

  /** `body` as read by the runtime, telling the watcher when it was read to its end or cancelled. */
  private watched(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        const chunk = await reader.read().catch((error: unknown) => {
          this.end(false);
          controller.error(error);
          return undefined;
        });
        if (chunk === undefined) return;
        if (chunk.done) {
          controller.close();
          this.end(true);
        } else controller.enqueue(chunk.value);
      },
      cancel: async (reason) => {
        this.end(false);
        await reader.cancel(reason);
      },
    });
  }
}

function noop(): void {}
