import { MemoryStore } from '@rl/store-memory';
import { InvalidOptionError } from '@rl/core';
import {
  checkAdapterFunctions,
  checkTrustProxy,
  requestHeader,
  forwardedClient,
  type FrameworkBinding,
  type RequestHeaders,
  type TrustProxy,
} from '@rl/core/http';

/** The options every Fetch adapter reads itself (accepted by the shared parser, not interpreted there). */
export const FETCH_ADAPTER_OPTIONS = ['onLimit', 'requestWasSuccessful', 'trustProxy', 'clientAddress'] as const;

/** How a Fetch adapter reads one request: its client address as the runtime gives it, its headers, its line. */
export interface FetchRequestReader<Req> {
  /** The address of the peer that sent the request (before any proxy is trusted), or undefined. */
  remoteAddress(req: Req): string | undefined;
  /** The request headers. */
  headers(req: Req): RequestHeaders;
  /** `METHOD /path`, without the query. */
  line(req: Req): string;
}

/** How a Fetch adapter's own functions are called, for the errors of bad ones: `onLimit`'s, and `requestWasSuccessful`'s parameters. */
export interface FetchFunctionShapes {
  /** What `onLimit` must be, in words (`a function (c, result) returning the denial response`). */
  readonly onLimit: string;
  /** `requestWasSuccessful`'s parameters (`(c)`). */
  readonly requestWasSuccessful: string;
}

/**
 * The binding of a Fetch adapter: the client IP is the runtime's address, or under `trustProxy` the
 * `X-Forwarded-For` entry that many proxies from the app (Fetch runtimes have no trust-proxy setting
 * of their own, so the middleware takes it).
 */
export function fetchBinding<Req>(
  owner: string,
  options: Readonly<Record<string, unknown>>,
  reader: FetchRequestReader<Req>,
  shapes: FetchFunctionShapes,
): FrameworkBinding<Req> {
  const trust: TrustProxy = checkTrustProxy(options.trustProxy, `${owner}.trustProxy`);
  const checkFunctions = checkAdapterFunctions(owner, shapes.onLimit, shapes.requestWasSuccessful);
  const trusted = trust !== false && trust !== 0;
  const remoteAddress = reader.remoteAddress;
  return {
    owner,
    adapterOptions: FETCH_ADAPTER_OPTIONS,
    clientIp: trusted
      ? (req) => forwardedClient(remoteAddress(req), headerValue(reader.headers(req), 'x-forwarded-for'), trust)
      : remoteAddress,
    requestHeaders: reader.headers,
    requestLine: reader.line,
    trustsProxy: () => trusted,
    trustProxyAdvice: `Pass ${owner}({ trustProxy: <number of proxies> })`,
    trustsAllProxies: () => trust === true,
    trustAllProxiesAdvice: `Pass ${owner}({ trustProxy: <number of proxies> }) instead of true`,
    createStore: () => new MemoryStore(),
    checkAdapterOptions: (all, counting) => {
      checkFunctions(all, counting);
      if (all.clientAddress !== undefined && typeof all.clientAddress !== 'function') {
        throw new InvalidOptionError(
          `${owner}.clientAddress`,
          all.clientAddress,
          'a function returning the address the runtime gives (for example from getConnInfo)',
        );
      }
    },
  };
}

/** A header's value, repeated ones joined as a Fetch `Headers` joins them. */
function headerValue(headers: RequestHeaders, name: string): string | undefined {
  const value = requestHeader(headers, name);
  return Array.isArray(value) ? value.join(', ') : value;
}
