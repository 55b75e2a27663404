/**
 * What a framework adapter gives the shared adapter suite: how to mount an app with rate-limit
 * middlewares, how to read its request object, and its idiom for `onLimit`. A fourth framework is
 * then an `Adapter` and a few lines that call {@link describeAdapter}.
 */
import type { ServerResponse } from 'node:http';
import type { Store } from '@rl/core';
import type { KeyControls } from '@rl/core/http';
import { startRequest, type RequestInit, type TestResponse } from '../http-client.js';

/**
 * The options of one middleware as the suite writes them: the options every adapter shares
 * (`algorithm`, `limits`, `key`, `cost`, `skip`, `headers`, `wait`, `store`, `clock`, `timers`, …).
 * Functions in them receive the framework's request object (`req`, `request`, `ctx`): the suite reads
 * it through {@link Adapter.view}.
 */
export type MiddlewareOptions = Record<string, unknown>;

/** What the suite's key, cost and skip functions read from a request. */
export interface RequestView {
  /** The path, without the query. */
  readonly path: string;
  /** The path with the query. */
  readonly url: string;
  /** A request header, or undefined when absent. */
  header(name: string): string | undefined;
  /** The framework's rate-limit result of this request (`req.rateLimit`, `request.rateLimit`, `ctx.state.rateLimit`), when there is one. */
  readonly rateLimit: unknown;
}

/** The app the suite asks for. */
export interface AppSpec {
  /** One middleware per entry, applied in order before every route. */
  middlewares: readonly MiddlewareOptions[];
  /**
   * Which proxies the app trusts (absent or false: none). `true`: one proxy, by count where the
   * framework can (Express `trust proxy` 1, Koa `app.proxy` with `maxIpsCount` 1; Fastify 5 trusts
   * nothing for a count, so its `trustProxy` '127.0.0.1'). `'addresses'`: the loopback address, by
   * address (Express 'loopback', Fastify '127.0.0.1'; Koa has no list, so one by count). `'all'`: every
   * proxy (Express `trust proxy` true, Fastify `trustProxy` true, Koa `app.proxy` without `maxIpsCount`).
   */
  trustProxy?: boolean | 'addresses' | 'all';
  /** Called when a request arrives, before any middleware, with the raw Node response (to watch its 'close'). */
  onArrival?(request: RequestView, res: ServerResponse): void;
  /**
   * Called by the route handler before it answers; awaited; a throw goes to the error handler. When it
   * returns `{ status }`, the handler answers with that status (and the same body); `{ headers }`, with
   * those response headers too.
   */
  handler?(request: RequestView): unknown;
}

/** A request whose client may leave before its answer (see {@link startLeaving}). */
export interface LeavingRequest {
  /** The status, once the head of the response reaches the client (never, when the client left first). */
  readonly answered: Promise<number>;
  /** The client goes away: its connection is destroyed (over `inject()`, the request is aborted). */
  leave(): void;
}

/**
 * An app mounted by {@link Adapter.mount}, listening on 127.0.0.1 (or, for an adapter served through
 * the framework's `inject()`, not listening at all). Every path (GET and POST) passes
 * the middlewares, then the route handler answers 200 `{ remaining }` (the `remaining` of the
 * framework's rate-limit result: `req.rateLimit`, `request.rateLimit`, `ctx.state.rateLimit`; null
 * when absent). An error (thrown by the handler, or by a key or cost function) is answered by the
 * app's error handling with 500 `{ error: message, code }`.
 */
export interface MountedApp {
  /** `http://127.0.0.1:<port>`; absent for an app served through `inject()`. */
  readonly url?: string;
  /** One request to this app (see `request` in http-client). */
  request(path?: string, init?: RequestInit): Promise<TestResponse>;
  /** A request whose client may leave: absent for an app with a {@link url} (a socket that is destroyed, see {@link startLeaving}). */
  start?(path: string, headers: Record<string, string>): LeavingRequest;
  /** Where the adapter exposes its limiter (`middleware.limiter`): the first middleware's first limit's state for `key`. */
  peek?(key: string): Promise<{ remaining: number }>;
  /** The first middleware's handle (Fastify: `app.rateLimit`): its key controls (`blockKey`, `setOverride`, …). */
  readonly controls: KeyControls;
  /** Drops the connections and stops listening. */
  close(): Promise<void>;
}

/** Starts a request to `app` whose client may leave before its answer: `app.start`, else a socket to `app.url`. */
export function startLeaving(app: MountedApp, path = '/', headers: Record<string, string> = {}): LeavingRequest {
  if (app.start !== undefined) return app.start(path, headers);
  if (app.url === undefined) throw new Error('the adapter suite: a mounted app needs a url or start()');
  const client = startRequest(app.url, path, headers);
  const answered = new Promise<number>((resolve) =>
    client.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }),
  );
  return { answered, leave: () => client.destroy() };
}

/** The status a suite handler asks for (`{ status }`), else 200. */
export function statusOf(answer: unknown): number {
  const status = (answer as { status?: unknown } | null | undefined)?.status;
  return typeof status === 'number' ? status : 200;
}

/** The response headers a suite handler asks for (`{ headers }`), else none. */
export function headersOf(answer: unknown): Record<string, string> {
  const headers = (answer as { headers?: unknown } | null | undefined)?.headers;
  return headers !== null && typeof headers === 'object' ? (headers as Record<string, string>) : {};
}

export interface Adapter {
  /** The framework and its major version, e.g. `Express 5`. */
  readonly name: string;
  /** The name of the adapter's factory, which its option errors name (`withRateLimit.algorithm`); default `rateLimit`. */
  readonly owner?: string;
  /** Builds and starts an app (see {@link MountedApp}); must throw, or reject, for invalid options. */
  mount(spec: AppSpec): Promise<MountedApp>;
  /** The framework's request object (`req`, `request`, `ctx`) as the suite reads it. */
  view(request: unknown): RequestView;
  /**
   * A response header as set so far, read from the arguments the framework gives an `actualCost`
   * (Express `(req, res)`, Fastify `(request, reply)`, Koa `(ctx)`).
   */
  responseHeader(actualCostArguments: readonly unknown[], name: string): string | undefined;
  /**
   * The app is served through the framework's `inject()` (light-my-request), not a socket: the tests
   * about sockets and the event loop's I/O phases (batched Redis calls) are left out.
   */
  readonly inject?: boolean;
  /** True when the adapter logs store outages on the console (Express, Koa); false when on the framework's own logger (Fastify). */
  readonly logsToConsole: boolean;
  /**
   * True when the adapter reports an error that comes after the response (an `actualCost` that
   * throws) as a process warning (Express, the Fetch handlers: `warnLateError`); absent when the
   * framework has its own path for it (Koa's 'error' event, Fastify's and Nest's loggers).
   */
  readonly lateErrorsAsWarnings?: boolean;
  /**
   * True when the adapter answers a request rl refuses to decide (a bad key or cost: an RL_* error)
   * with a 500 of its own and warns the error once per code (the Fetch handler, which has no error
   * handler to pass it to); the suite then checks each such warning against its answers.
   */
  readonly refusalsAsWarnings?: boolean;
  /** An `onLimit` that answers with the JSON `body(result)` (status and headers are already set). */
  onLimitSending(body: (result: { retryAfterSeconds: number }) => unknown): unknown;
  /**
   * The storage namespace of a middleware created with `options` (not mounted; `middleware.limiter.prefix`);
   * throws as creating it would. Absent where a middleware is only registered (a Fastify plugin).
   */
  readonly namespaceOf?: (options: Record<string, unknown>) => string;
}

/** A store the suite runs every test on. */
export interface StoreUnderTest {
  /** `memory store`, `Redis store`. */
  readonly name: string;
  /** A store with a fresh state, one per test. */
  create(): Store;
  /** True for a store across the network: the middlewares get a generous store timeout (on fake timers, so it never fires by itself). */
  readonly remote: boolean;
}
