import type { IncomingHttpHeaders } from 'node:http';
import type { Store } from '../store/interface.js';
import type { OutageLogger } from './outage-log.js';

/** What an adapter tells the http layer about its framework. */
export interface FrameworkBinding<Req> {
  /** Name of the factory in error messages, for example `rateLimit`. */
  readonly owner: string;
  /** Option names the adapter handles itself (accepted here, not interpreted). */
  readonly adapterOptions: readonly string[];
  /** The client IP as the framework resolves it under its trust-proxy setting. */
  clientIp(req: Req): string | undefined;
  /** The request headers. */
  requestHeaders(req: Req): IncomingHttpHeaders;
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
  /** Creates the default store (a memory store) when the options give none. */
  createStore(): Store;
  /** Where store outages are logged (once per outage); default: the console. */
  readonly logger?: OutageLogger;
}
