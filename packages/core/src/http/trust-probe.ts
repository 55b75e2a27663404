/**
 * Whether a framework's trust-proxy setting trusts every proxy, found by asking it about a chain of
 * forwarding hops no deployment trusts on purpose: addresses of the documentation ranges (RFC 5737,
 * RFC 3849), more hops than any real chain of proxies. Express and Fastify compile their setting into
 * a proxy-addr trust function, and neither says which setting it was: `true` and a function that
 * trusts everything are the same danger, so the function's answers are what counts.
 */

/** Hops probed, the socket peer (hop 0) included: beyond any real chain, so a hop count (trust the nearest n) is not taken for trusting all. */
const PROBE_HOPS = 16;
/** The addresses the hops alternate between: one IPv4 and one IPv6, so a list of IPv4 ranges only is not taken for trusting all. */
const PROBE_ADDRESSES = ['192.0.2.1', '2001:db8::1'] as const;
/** The client at the far end of the probed chain: the leftmost `X-Forwarded-For` entry, which a client can write itself. */
const FORGED_CLIENT = '198.51.100.1';

/** The address of hop `hop` of the probed chain (hop 0 is the socket peer). */
const hopAddress = (hop: number): string => PROBE_ADDRESSES[hop % PROBE_ADDRESSES.length]!;

/**
 * True when `trust(address, hop)` (proxy-addr's signature, as Express's `trust proxy fn`: hop 0 is the
 * socket peer) trusts every hop of the probed chain: then any client names itself in X-Forwarded-For.
 * False for a hop count below 16, for address lists (`'loopback'`, `'10.0.0.0/8'`) and for a function
 * that throws (no warning on a doubt).
 */
export function trustsEveryAddress(trust: (address: string, hop: number) => unknown): boolean {
  try {
    for (let hop = 0; hop < PROBE_HOPS; hop++) if (trust(hopAddress(hop), hop) !== true) return false;
    return true;
  } catch {
    return false;
  }
}

/** A Node request as proxy-addr reads one (`socket.remoteAddress`, `x-forwarded-for`): {@link FORGED_CLIENT} behind the probed chain. */
export interface ForgedRequest {
  readonly headers: { readonly 'x-forwarded-for': string };
  readonly socket: { readonly remoteAddress: string };
}

/**
 * True when `clientIp` resolves a request that came from {@link FORGED_CLIENT} through the probed
 * chain to that client: the framework trusts every hop. For frameworks that keep their trust function
 * to themselves (Fastify: `ip` of a copy of the request whose `raw` is the forged request). False when
 * `clientIp` throws (no warning on a doubt).
 */
export function resolvesForgedClient(clientIp: (raw: ForgedRequest) => unknown): boolean {
  const forwarded = [FORGED_CLIENT];
  for (let hop = PROBE_HOPS - 1; hop >= 1; hop--) forwarded.push(hopAddress(hop));
  try {
    return (
      clientIp({ headers: { 'x-forwarded-for': forwarded.join(', ') }, socket: { remoteAddress: hopAddress(0) } }) ===
      FORGED_CLIENT
    );
  } catch {
    return false;
  }
}
