/**
 * Whether a framework's trust-proxy setting trusts every proxy, found by asking it about a chain of
 * forwarding hops no deployment trusts on purpose: addresses of the documentation ranges (RFC 5737,
 * RFC 3849), more hops than any real chain of proxies. Express and Fastify compile their setting into
 * a proxy-addr trust function, and neither says which setting it was: `true` and a function that
 * trusts everything are the same danger, so the function's answers are what counts.
 */

/** Hops probed, the socket peer (hop 0) included: beyond any real chain, so a hop count (trust the nearest n) is not taken for trusting all. */
const PROBE_HOPS = 16;
/**
 * The probed chains, one per address family, each of one documentation address: a setting that
 * trusts every address of one family (`'0.0.0.0/0'`, `'0.0.0.0/1, 128.0.0.0/1'`, a function trusting
 * any address with a dot) lets every client of that family name itself, as trusting all does.
 */
const PROBE_FAMILIES = [
  { address: '192.0.2.1', forged: '198.51.100.1' },
  { address: '2001:db8::1', forged: '2001:db8::bad' },
] as const;

/**
 * True when `trust(address, hop)` (proxy-addr's signature, as Express's `trust proxy fn`: hop 0 is the
 * socket peer) trusts every hop of a probed chain of either family: then any client of that family
 * names itself in X-Forwarded-For. False for a hop count below 16, for address lists that name ranges
 * of proxies (`'loopback'`, `'10.0.0.0/8'`) and for a function that throws (no warning on a doubt).
 */
export function trustsEveryAddress(trust: (address: string, hop: number) => unknown): boolean {
  try {
    return PROBE_FAMILIES.some(({ address }) => {
      for (let hop = 0; hop < PROBE_HOPS; hop++) if (trust(address, hop) !== true) return false;
      return true;
    });
  } catch {
    return false;
  }
}

/** A Node request as proxy-addr reads one (`socket.remoteAddress`, `x-forwarded-for`): a forged client behind a probed chain. */
export interface ForgedRequest {
  readonly headers: { readonly 'x-forwarded-for': string };
  readonly socket: { readonly remoteAddress: string };
}

/**
 * True when `clientIp` resolves a request that came from a forged client (the leftmost
 * `X-Forwarded-For` entry, which a client can write itself) through a probed chain of either family
 * to that client: the framework trusts every hop. For frameworks that keep their trust function to
 * themselves (Fastify: `ip` of a copy of the request whose `raw` is the forged request). False when
 * `clientIp` throws (no warning on a doubt).
 */
export function resolvesForgedClient(clientIp: (raw: ForgedRequest) => unknown): boolean {
  try {
    return PROBE_FAMILIES.some(({ address, forged }) => {
      const forwarded = [forged, ...Array.from({ length: PROBE_HOPS - 1 }, () => address)];
      return (
        clientIp({ headers: { 'x-forwarded-for': forwarded.join(', ') }, socket: { remoteAddress: address } }) ===
        forged
      );
    });
  } catch {
    return false;
  }
}
