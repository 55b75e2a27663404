import type { Store } from '../store/interface.js';
import { InvalidOptionError } from '../errors.js';
import { checkSuccessTest } from './outcome.js';
import type { OutageLogger } from './outage-log.js';

/** A request's headers by lower-case name, as Node's `IncomingMessage.headers` holds them. */
export type NodeRequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** The part of a Fetch `Headers` the http layer reads: a header's value (repeated ones joined by `, `), or null. */
export interface FetchRequestHeaders {
  get(name: string): string | null;
}

/** A request's headers: Node's record (Express, Fastify, Koa), or a Fetch `Headers` (Hono, `Request`), read as they are. */
export type RequestHeaders = NodeRequestHeaders | FetchRequestHeaders;

/** The value of header `name` (lower-case) in either form of {@link RequestHeaders}; undefined when absent. */
export function requestHeader(headers: RequestHeaders, name: string): string | string[] | undefined {
  if (typeof headers.get === 'function') return (headers as FetchRequestHeaders).get(name) ?? undefined;
  return (headers as NodeRequestHeaders)[name];
}

/** What an adapter tells the http layer about its framework. */
export interface FrameworkBinding<Req> {
  /** Name of the factory in error messages, for example `rateLimit`. */
  readonly owner: string;
  /** Option names the adapter handles itself (accepted here, not interpreted). */
  readonly adapterOptions: readonly string[];
  /** The client IP as the framework resolves it under its trust-proxy setting. */
  clientIp(req: Req): string | undefined;
  /** The request headers. */
  requestHeaders(req: Req): RequestHeaders;
  /** True when the framework is configured to trust a proxy's forwarding headers. */
  trustsProxy(req: Req): boolean;
  /** How to configure trust proxy in this framework, for the warning. */
  readonly trustProxyAdvice: string;
  /**
   * True when the framework trusts every proxy (Express `trust proxy` true, Fastify `trustProxy` true,
   * Koa `app.proxy` without `maxIpsCount`): the client IP is then the leftmost `X-Forwarded-For` entry,
   * which any client writes itself. Asked once, at a middleware's first request that uses the default key.
   */
  trustsAllProxies(req: Req): boolean;
  /** What to set instead of trusting every proxy in this framework, for the `RL_TRUST_ALL_PROXIES` warning. */
  readonly trustAllProxiesAdvice: string;
  /** `METHOD /path` of a request, without the query: the default fingerprint of an idempotent retry (with its cost). */
  requestLine?(req: Req): string;
  /** Creates the default store (a memory store) when the options give none. */
  createStore(): Store;
  /** Where store outages are logged (once per outage); default: the console. */
  readonly logger?: OutageLogger;
  /**
   * Validates the adapter's own options (`adapterOptions`: `onLimit`, `requestWasSuccessful`, …) once
   * the shared ones are parsed, before the middleware takes its default namespace or creates a store,
   * so that a middleware it rejects leaves nothing behind (the next one gets the namespace this one
   * would have had). Throws `InvalidOptionError`. `counting`: `skipFailedRequests` or
   * `skipSuccessfulRequests` is on.
   */
  checkAdapterOptions?(options: Readonly<Record<string, unknown>>, counting: boolean): void;
}

/**
 * A binding for requests that pass no proxy and carry no headers (the simulator's replayed arrivals, a
 * test's requests): it trusts no proxy (so it has no advice to give) and takes no adapter options; the
 * owner, the client's address and the default store are given.
 */
export function directBinding<Req>(
  parts: Pick<FrameworkBinding<Req>, 'owner' | 'clientIp' | 'createStore'>,
): FrameworkBinding<Req> {
  return {
    adapterOptions: [],
    requestHeaders: () => ({}),
    trustsProxy: () => false,
    trustProxyAdvice: '',
    trustsAllProxies: () => false,
    trustAllProxiesAdvice: '',
    ...parts,
  };
}

/**
 * The {@link FrameworkBinding.checkAdapterOptions} of an adapter whose own options are the two every
 * adapter takes: `onLimit` (a function, when given; `onLimit` describes what it must be, for example
 * `'a function (ctx, result) that sets the denial response'`) and `requestWasSuccessful` (a function
 * `successSignature`, only with counting by outcome; see `checkSuccessTest`). Errors name `<owner>.<option>`.
 */
export function checkAdapterFunctions(
  owner: string,
  onLimit: string,
  successSignature: string,
): NonNullable<FrameworkBinding<unknown>['checkAdapterOptions']> {
  return (options, counting) => {
    if (options.onLimit !== undefined && typeof options.onLimit !== 'function')
      throw new InvalidOptionError(`${owner}.onLimit`, options.onLimit, onLimit);
    checkSuccessTest(options.requestWasSuccessful, owner, counting, successSignature);
  };
}
