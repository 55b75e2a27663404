// What the guard needs of Nest's two HTTP platforms, told apart per request: Express (`req`, `res`
// are Express's, on Node's IncomingMessage and ServerResponse) and Fastify (`request`, `reply`, with
// the Node objects in `request.raw` and `reply.raw`).
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import type { Store } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import {
  checkAdapterFunctions,
  resolvesForgedClient,
  trustsEveryAddress,
  type FrameworkBinding,
  type HeaderAccess,
  type NodeResponse,
  type OutageLogger,
} from '@rl/core/http';

/**
 * The request a guard sees: Express's `req` on the Express platform, Fastify's `request` on the
 * Fastify platform. Key, cost and skip functions receive it; annotate their parameter with your
 * platform's type (`(req: Request) => …`) and the options take that type.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type NestRequest = any;
/** The response a guard sees: Express's `res`, or Fastify's `reply`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type NestResponse = any;

/** The part of a Fastify reply the guard uses. */
interface FastifyReplyLike {
  readonly raw: ServerResponse;
  readonly statusCode: number;
  code(statusCode: number): unknown;
  header(name: string, value: string): unknown;
  getHeader(name: string): unknown;
  type(contentType: string): { send(payload: string): unknown };
}

/** The part of an Express request the binding reads. */
interface ExpressRequestLike {
  readonly headers: IncomingHttpHeaders;
  readonly method: string;
  readonly originalUrl?: string;
  readonly url: string;
  readonly ip?: string;
  readonly socket?: { readonly remoteAddress?: string };
  readonly app?: { get(setting: string): unknown };
}

/** The part of a Fastify request the binding reads. */
interface FastifyRequestLike {
  readonly raw: { readonly socket?: { readonly remoteAddress?: string } };
  readonly headers: IncomingHttpHeaders;
  readonly method: string;
  readonly url: string;
  readonly ip: string;
  readonly ips?: readonly string[];
}

/** True for Fastify's request (it carries the Node request in `raw`; Express's request is the Node request). */
export const isFastifyRequest = (req: object): req is FastifyRequestLike =>
  (req as { raw?: unknown }).raw !== undefined;

/** True for Fastify's reply (it carries the Node response in `raw`). */
export const isFastifyReply = (res: object): res is FastifyReplyLike => (res as { raw?: unknown }).raw !== undefined;

/** The Node response of either platform's response. */
export const nodeResponseOf = (res: NestResponse): ServerResponse & NodeResponse =>
  (isFastifyReply(res) ? res.raw : res) as ServerResponse & NodeResponse;

/**
 * Response headers on either platform: Fastify's reply methods (Fastify writes them with its own at
 * `send`), Node's on Express. No `claim`: `record` tells the writer whether rl wrote on it before.
 */
export const platformHeaders: HeaderAccess<NestResponse> = {
  get: (res, name) => (res as FastifyReplyLike).getHeader(name),
  set: (res, name, value) => {
    if (isFastifyReply(res)) res.header(name, value);
    else (res as ServerResponse).setHeader(name, value);
  },
};

/** Sets the status code of `res` on either platform. */
export function setStatusCode(res: NestResponse, statusCode: number): void {
  if (isFastifyReply(res)) res.code(statusCode);
  else (res as ServerResponse).statusCode = statusCode;
}

/**
 * Sends `body` as the whole response, with `contentType`, on either platform (the status and the
 * other headers already set): Fastify's `reply.type(contentType).send(body)` (Fastify writes the
 * headers set on the reply, and adds `; charset=utf-8`), Node's `setHeader` and `end(body)` on
 * Express's response (as @rl/express sends a denial). Both are the platforms' public API, the same on
 * Nest 11 and 12; nothing of Nest's own runs (see `nestIO`).
 */
export function sendBody(res: NestResponse, contentType: string, body: string): void {
  if (isFastifyReply(res)) {
    // Not awaited: a reply is a thenable that settles only when the response has been sent.
    void res.type(contentType).send(body);
    return;
  }
  const node = res as ServerResponse;
  node.setHeader('Content-Type', contentType);
  node.end(body);
}

/** Nest's logger, context `RateLimit`: it follows the app's (`NestFactory.create(…, { logger })`, `app.useLogger`). */
export const nestLogger = new Logger('RateLimit');

/** Store outages (once per outage, see `OutageLog`) on Nest's logger. */
const outageLogger: OutageLogger = {
  warn: (_details, message) => nestLogger.warn(message),
  info: (_details, message) => nestLogger.log(message),
};

/** The options the guard handles itself, beside the shared ones. */
export const ADAPTER_OPTIONS = ['onLimit', 'requestWasSuccessful'];

const TRUST_PROXY_ADVICE =
  "On Express: app.set('trust proxy', <number of proxies>) (NestExpressApplication); on Fastify: new FastifyAdapter({ trustProxy }) with the proxies' addresses or CIDRs";
const TRUST_ALL_PROXIES_ADVICE =
  "On Express: app.set('trust proxy', <number of proxies>) or the proxies' addresses instead of true; on Fastify: new FastifyAdapter({ trustProxy }) with the proxies' addresses or CIDRs instead of true";

/**
 * What the HTTP layer needs of Nest, for a limit whose errors name `owner`: each request is read as
 * its platform's (Fastify: `request.ip`, the trust probe of @rl/fastify; Express: `req.ip` under
 * `trust proxy`, as @rl/express). One binding serves both platforms because a limit is built before
 * the app (and its platform) exists.
 */
export function nestBinding(
  owner: string,
  createStore: () => Store = () => new MemoryStore(),
): FrameworkBinding<NestRequest> {
  return {
    owner,
    logger: outageLogger,
    adapterOptions: ADAPTER_OPTIONS,
    clientIp: (req: FastifyRequestLike | ExpressRequestLike) =>
      isFastifyRequest(req) ? req.ip : (req.ip ?? req.socket?.remoteAddress),
    requestHeaders: (req: FastifyRequestLike | ExpressRequestLike) => req.headers,
    requestLine: (req: FastifyRequestLike | ExpressRequestLike) =>
      `${req.method} ${(isFastifyRequest(req) ? req.url : (req.originalUrl ?? req.url)).split('?')[0]!}`,
    trustsProxy: (req: FastifyRequestLike | ExpressRequestLike) =>
      isFastifyRequest(req)
        ? req.ip !== req.raw.socket?.remoteAddress || (req.ips?.length ?? 0) > 1
        : Boolean(req.app?.get('trust proxy')),
    trustProxyAdvice: TRUST_PROXY_ADVICE,
    trustsAllProxies: (req: FastifyRequestLike | ExpressRequestLike) => {
      if (!isFastifyRequest(req)) {
        const trust = req.app?.get('trust proxy fn');
        return typeof trust === 'function' && trustsEveryAddress(trust as (address: string, hop: number) => unknown);
      }
      // Fastify does not expose its trustProxy setting: ask for the `ip` of a forged request (a copy with another `raw`).
      return resolvesForgedClient((raw) => (Object.create(req, { raw: { value: raw } }) as FastifyRequestLike).ip);
    },
    trustAllProxiesAdvice: TRUST_ALL_PROXIES_ADVICE,
    createStore,
    checkAdapterOptions: checkAdapterFunctions(
      owner,
      'a function (context, result) that returns the denial body or throws the exception to send',
      '(req, res)',
    ),
  };
}
