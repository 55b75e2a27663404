import type { HeaderAccess } from './header-access.js';
import type { CloseNotifier } from './hold.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import type { ResponseEnded } from './response-io.js';
import type { RateLimitResult } from './result.js';

/** A listener of the client's leaving (the request's `AbortSignal` calls it). */
type CloseListener = () => void;

interface EndWatch {
  readonly req: unknown;
  readonly result: RateLimitResult;
  readonly ended: ResponseEnded<unknown, FetchExchange>;
}

/**
 * The response side of one request on a Fetch runtime (Hono, `Bun.serve`, `Deno.serve`, Workers, a
 * Next.js route handler), where a response is a value the handler returns, not an object written to:
 * what Node's `ServerResponse` is for the Node adapters. One per request, shared by every rl
 * middleware on it (so a second one merges its RateLimit headers with the first's).
 *
 * - Headers: the header writer sets them here ({@link fetchHeaderAccess}); {@link finish} puts them on
 *   the handler's response, {@link denial} on a denial's.
 * - The client leaving: the request's `AbortSignal` (every Fetch runtime aborts it when the client
 *   goes), read as a {@link CloseNotifier} for holds and for the check before admitting.
 * - The end of the response: {@link finish} watches the body; a watcher hears `finished` true when the
 *   body was read to its end (or there is none), false when it was cancelled or the client left while
 *   it streamed. A client that leaves while the handler runs is heard when the handler answers or
 *   throws (not finished): a permit guards the work, not the connection. A handler that threw with
 *   its client there is a finished 500 ({@link failed}).
 */
export class FetchExchange implements CloseNotifier {
  /** Names (as written) and values, in pairs: a handful per response, so a scan beats a map. */
  private readonly pairs: string[] = [];
  private claimed = false;
  private watches: EndWatch[] | undefined;
  /** The status of the response this exchange finished (0 before). */
  status = 0;
  /** The response this exchange finished (undefined before, or when the handler threw). */
  response: Response | undefined = undefined;
  /** How many rl middlewares of the request are running the rest of its chain (see {@link descend}). */
  private depth = 0;

  /**
   * `request`: the request, whose `signal` is read only when a hold or a watch needs it (making one
   * costs `@hono/node-server` an `AbortController` per request); `connection`: where the runtime has
   * one, the Node response under it (`@hono/node-server`'s `outgoing`), whose `destroyed` tells that
   * the client left without the signal.
   */
  constructor(
    private readonly request: { readonly signal?: AbortSignal; readonly method?: string },
    private readonly connection?: { readonly destroyed?: boolean },
  ) {}

  /** The request's signal; undefined where the runtime gives none (a client's leaving is then never seen). */
  private get signal(): AbortSignal | undefined {
    return this.request.signal;
  }

  /** True once the client is gone. */
  get destroyed(): boolean {
    const connection = this.connection;
    if (connection !== undefined) return connection.destroyed === true;
    return this.signal?.aborted === true;
  }

  once(_event: 'close', listener: CloseListener): this {
    this.signal?.addEventListener('abort', listener, { once: true });
    return this;
  }

  removeListener(_event: 'close', listener: CloseListener): this {
    this.signal?.removeEventListener('abort', listener);
    return this;
  }

  /** A header set so far (case-insensitive), or undefined. */
  header(name: string): string | undefined {
    const at = this.indexOf(name);
    return at === -1 ? undefined : this.pairs[at + 1];
  }

  /** Sets header `name` (replacing one of the same name). */
  setHeader(name: string, value: string): void {
    const at = this.indexOf(name);
    if (at === -1) this.pairs.push(name, value);
    else this.pairs[at + 1] = value;
  }

  /**
   * Runs the rest of the request's chain (`run`: the next middleware, the handler) for one rl
   * middleware. Resolves what `run` resolves; the rl middleware that made the exchange, the outermost,
   * is the last to return, and {@link outermostReturned} is then true: it finishes the exchange. A
   * throw from `run` reaching the outermost is the 500 the runtime sends: `failing` is called (to show
   * it where the framework keeps the response), then the watchers hear it ({@link failed}), and the
   * throw goes on.
   */
  async descend<T>(run: () => Promise<T>, failing?: () => void): Promise<T> {
    this.depth++;
    try {
      return await run();
    } catch (error) {
      if (this.depth === 1) {
        failing?.();
        this.failed();
      }
      throw error;
    } finally {
      this.depth--;
    }
  }

  /** True once no rl middleware of the request is running the rest of its chain: the one that just returned from {@link descend} is the outermost. */
  get outermostReturned(): boolean {
    return this.depth === 0;
  }

  /** True on the first call: no rl middleware has written its headers on this request yet. */
  claim(): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    return true;
  }

  /**
   * Tells `ended` once when the response of `req`'s admitted request ends (see {@link finish}); not
   * finished when its client left, as soon as it leaves while the body streams, and when the handler
   * answers or throws when it left before (the handler's work is what a permit guards).
   */
  watch<Req>(req: Req, result: RateLimitResult, ended: ResponseEnded<Req, FetchExchange>): void {
    if (this.watches === undefined) {
      this.watches = [];
      this.signal?.addEventListener('abort', this.left, { once: true });
    }
    this.watches.push({ req, result, ended: ended as ResponseEnded<unknown, FetchExchange> });
  }

  /** The client left: while the body streams, the response ends unfinished now; while the handler runs, when it answers ({@link finish}, {@link failed}). */
  private readonly left = (): void => {
    if (this.response !== undefined) this.end(false);
  };

  /**
   * A denial's response: `status`, the headers set here and `body` as problem+json (or, with `body`
   * a `Response` from an `onLimit`, that response with the headers added).
   */
  denial(status: number, body: string | Response): Response {
    // A denial is never a success: an `onLimit` response left at 200 (`Response.json(...)`'s default) gets the denial's status.
    if (body instanceof Response) return this.finish(body.status < 300 ? new Response(body.body, { status, headers: body.headers }) : body);
    this.status = status;
    const headers = new Headers();
    this.copyTo(headers);
    headers.set('content-type', PROBLEM_CONTENT_TYPE);
    return new Response(body, { status, headers });
  }

  /**
   * The handler threw instead of answering: the runtime answers 500 (Bun, Deno, Workers, Node's
   * servers), so watchers hear of a finished response with that status, as a Node framework's error
   * handler sends one; not finished when the client has left.
   */
  failed(): void {
    if (this.watches === undefined) return;
    this.status = 500;
    this.response = new Response(null, { status: 500 });
    this.end(!this.destroyed);
  }

  /**
   * The handler's response with the headers set here (on a copy when its headers are immutable, as a
   * `fetch()` response's are); when a watcher waits for the end, with a body that tells it.
   */
  finish(response: Response): Response {
    this.status = response.status;
    const out = this.pairs.length > 0 ? this.withHeaders(response) : response;
    this.response = out;
    if (this.watches === undefined) return out;
    // The client left while the handler ran: nobody will read the body, and the handler's work is over.
    if (this.destroyed) {
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
   * `response` with the headers set here: on it, or on a copy when its headers are immutable (a
   * `fetch()` response). A status no Response can be made with (a WebSocket upgrade's 101) keeps the
   * original without them.
   */
  private withHeaders(response: Response): Response {
    try {
      this.copyTo(response.headers);
      return response;
    } catch {
      let copy: Response;
      try {
        copy = new Response(response.body, response);
      } catch {
        return response;
      }
      this.copyTo(copy.headers);
      return copy;
    }
  }

  /** Tells every watcher once: `finished` true when the response was sent in full. */
  private end(finished: boolean): void {
    const watches = this.watches;
    if (watches === undefined) return;
    this.watches = undefined;
    this.signal?.removeEventListener('abort', this.left);
    for (const watch of watches) watch.ended(watch.req, this, watch.result, finished);
  }

  /** `body` as read by the runtime, telling the watchers when it was read to its end or cancelled. */
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

  /** The index in {@link pairs} of header `name` (case-insensitive), or -1. */
  private indexOf(name: string): number {
    const pairs = this.pairs;
    for (let i = 0; i < pairs.length; i += 2) if (equalsIgnoringCase(pairs[i]!, name)) return i;
    return -1;
  }

  private copyTo(headers: Headers): void {
    const pairs = this.pairs;
    for (let i = 0; i < pairs.length; i += 2) headers.set(pairs[i]!, pairs[i + 1]!);
  }
}

/** {@link HeaderAccess} of a {@link FetchExchange}. */
export const fetchHeaderAccess: HeaderAccess<FetchExchange> = {
  get: (exchange, name) => exchange.header(name),
  set: (exchange, name, value) => exchange.setHeader(name, value),
  claim: (exchange) => exchange.claim(),
};

function equalsIgnoringCase(a: string, b: string): boolean {
  return a.length === b.length && (a === b || a.toLowerCase() === b.toLowerCase());
}
