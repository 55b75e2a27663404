import { InvalidOptionError } from '../errors.js';

/**
 * Which proxies a Fetch app trusts to say who the client is (Fetch runtimes have no trust-proxy
 * setting of their own, so the adapter takes one): `false` none (the default: the client is the
 * address the runtime gives); a number `n`, the `n` proxies nearest the app (each appends the address
 * it received the request from to `X-Forwarded-For`); `true` every proxy (the leftmost entry, which a
 * client can write itself: warned once as `RL_TRUST_ALL_PROXIES`).
 */
export type TrustProxy = boolean | number;

/** Checks a {@link TrustProxy} option (`field` names it in the error). */
export function checkTrustProxy(value: unknown, field: string): TrustProxy {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  throw new InvalidOptionError(
    field,
    value,
    'false (no proxy), a number of proxies in front of the app (1 for one load balancer), or true (every proxy: the leftmost X-Forwarded-For entry)',
  );
}

/**
 * The client's address under `trust`: `remote` (the address the runtime gives: the nearest peer) when
 * no proxy is trusted; else the `X-Forwarded-For` entry `trust` hops from the app. Where the runtime
 * gives no address (a Next.js route handler, behind its platform's proxy), the nearest proxy is the
 * platform: its entry is the last one. More trusted hops than entries: the leftmost entry.
 */
export function forwardedClient(
  remote: string | undefined,
  forwardedFor: string | null | undefined,
  trust: TrustProxy,
): string | undefined {
  if (trust === false || trust === 0 || forwardedFor === null || forwardedFor === undefined) return remote;
  const entries = forwardedFor.split(',');
  // The chain from the client is [...X-Forwarded-For, remote]: the nearest of `trust` proxies is the
  // remote peer (or the platform, without one), and the client the entry the farthest one appended.
  const entry = entries[trust === true ? 0 : Math.max(0, entries.length - trust)]!.trim();
  return entry === '' ? remote : entry;
}

interface BunServer {
  requestIP(request: Request): { address: string } | null;
}
interface DenoServeInfo {
  remoteAddr: { hostname: string };
}
interface NodeServerBindings {
  incoming: { socket: { remoteAddress?: string } };
}

/**
 * The client's address a Fetch runtime gives next to a request, from what it passes the handler beside
 * it (`context`: Hono's `c.env`, or the second argument of a fetch handler): `@hono/node-server`'s
 * `{ incoming }`, `Bun.serve`'s server (`requestIP`), `Deno.serve`'s `info.remoteAddr`; on Cloudflare
 * Workers the `CF-Connecting-IP` header its edge sets. Undefined where none is given (a Next.js route
 * handler: give the middleware `trustProxy` or a `key`).
 */
export function runtimeClientAddress(request: Request, context: unknown): string | undefined {
  if (context !== null && typeof context === 'object') {
    // Hono on Bun takes the server as `c.env` or, beside other bindings, as `c.env.server` (hono/bun's `getBunServer`).
    const bindings = ((context as { server?: unknown }).server ?? context) as Partial<NodeServerBindings & BunServer>;
    const node = bindings.incoming?.socket?.remoteAddress;
    if (node !== undefined) return node;
    if (typeof bindings.requestIP === 'function') return bindings.requestIP(request)?.address ?? undefined;
    const deno = (context as Partial<DenoServeInfo>).remoteAddr?.hostname;
    if (typeof deno === 'string') return deno;
  }
  if (onCloudflareWorkers) return request.headers.get('cf-connecting-ip') ?? undefined;
  return undefined;
}

const onCloudflareWorkers =
  (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === 'Cloudflare-Workers';
