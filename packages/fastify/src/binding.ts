import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Store } from '@rl/core';
import {
  checkAdapterFunctions,
  resolvesForgedClient,
  type FrameworkBinding,
  type HeaderAccess,
  type OutageLogger,
} from '@rl/core/http';

/** The options the adapter handles itself, beside the shared ones (the plugin adds `global`). */
export const ADAPTER_OPTIONS = ['onLimit', 'hook', 'requestWasSuccessful'];

/**
 * The names rl writes, as Fastify keeps them: `reply.header` lowercases every name it is given, a new
 * string per call unless the name is lowercase already (two or three per request).
 */
const LOWERCASE_NAMES: Readonly<Record<string, string>> = {
  RateLimit: 'ratelimit',
  'RateLimit-Policy': 'ratelimit-policy',
  'Retry-After': 'retry-after',
};

// No `claim`: `record` tells the header writer whether an rl limit wrote on this reply before (see fastifyIO).
export const replyHeaders: HeaderAccess<FastifyReply> = {
  get: (reply, name) => reply.getHeader(name),
  set: (reply, name, value) => {
    reply.header(LOWERCASE_NAMES[name] ?? name, value);
  },
};

/** What the HTTP layer needs to know of Fastify, for a limit whose errors name `owner`. */
export function fastifyBinding(
  owner: string,
  createStore: () => Store,
  logger: OutageLogger,
): FrameworkBinding<FastifyRequest> {
  return {
    owner,
    logger,
    adapterOptions: ADAPTER_OPTIONS,
    clientIp: (request) => request.ip,
    requestHeaders: (request) => request.headers,
    requestLine: (request) => `${request.method} ${request.url.split('?')[0]!}`,
    // Fastify does not expose its trustProxy setting: when the resolved IP is another than the socket
    // peer, or the chain it resolved has more than the peer (a forwarded client whose address is the
    // proxy's own), the forwarding header was trusted.
    trustsProxy: (request) => request.ip !== request.raw.socket?.remoteAddress || (request.ips?.length ?? 0) > 1,
    // Not a hop count: for `trustProxy: <number>` Fastify 5 trusts no forwarding header (it cannot check the peer).
    trustProxyAdvice:
      "Create the server with Fastify({ trustProxy }) set to the proxies' addresses or CIDRs (for example '10.0.0.0/8') or a function (address, hop) => boolean (a number of proxies trusts nothing in Fastify 5)",
    // Nor in initialConfig: ask for the `ip` of a forged request (a copy of `request` with another `raw`).
    trustsAllProxies: (request) =>
      resolvesForgedClient((raw) => (Object.create(request, { raw: { value: raw } }) as FastifyRequest).ip),
    trustAllProxiesAdvice:
      "Create the server with Fastify({ trustProxy }) set to the proxies' addresses or CIDRs (for example '10.0.0.0/8') instead of true",
    createStore,
    checkAdapterOptions: checkAdapterFunctions(
      owner,
      'a function (request, reply, result) that sends the denial response',
      '(request, reply)',
    ),
  };
}
