import { InvalidKeyError, errorDocsUrl } from '../errors.js';
import type { FrameworkBinding } from './binding.js';
import { hasForwardingHeader, ipKey, withoutPort } from './keys.js';
import { emitWarning } from '../runtime.js';

/** Most IPv6 addresses whose key one default key remembers. */
const IPV6_KEY_CACHE_SIZE = 10_000;

/**
 * The default key of one middleware: the client IP under the framework's trust-proxy setting, without
 * a port (`198.51.100.7:50001`, `[2001:db8::1]:443`), IPv6 addresses grouped by `ipv6Subnet`. Warns
 * once (`RL_TRUST_PROXY`) when a request carries a forwarding header the framework does not trust:
 * every client behind the proxy then shares one key. Warns once (`RL_TRUST_ALL_PROXIES`) when, at its
 * first request, the framework trusts every proxy: a client then gets a fresh key, so a fresh quota,
 * by writing its own `X-Forwarded-For`. (At the first request because a middleware is created before
 * it is mounted and never sees the app; after it, the check costs nothing.)
 */
export class DefaultKey<Req> {
  private proxyWarned = false;
  private trustChecked = false;
  /** IPv6 address → key: parsing an address is slow next to a decision, and clients repeat (bounded; cleared when full). */
  private readonly ipv6Keys = new Map<string, string>();

  constructor(
    private readonly binding: FrameworkBinding<Req>,
    private readonly ipv6Subnet: number | false,
  ) {}

  /** The key of `req`; throws {@link InvalidKeyError} when the framework reports no client IP. */
  readonly of = (req: Req): string => {
    const binding = this.binding;
    if (!this.trustChecked) this.checkTrustAll(req);
    if (!this.proxyWarned && hasForwardingHeader(binding.requestHeaders(req)) && !binding.trustsProxy(req)) {
      this.proxyWarned = true;
      emitWarning(
        `A request carries X-Forwarded-For but trust proxy is not configured, so the rate limit keys every client behind the proxy on the proxy's address. ${binding.trustProxyAdvice}, or pass key(req). (rl ${binding.owner}, warned once per middleware.) See ${errorDocsUrl('RL_TRUST_PROXY')}`,
        { code: 'RL_TRUST_PROXY' },
      );
    }
    const ip = binding.clientIp(req);
    if (typeof ip !== 'string' || ip.length === 0) {
      throw new InvalidKeyError(
        ip,
        'the framework reports no client IP for this request (a closed socket, or a proxy setup that hides it); give the middleware a `key` function',
      );
    }
    if (ip.indexOf(':') === -1) return ip;
    // `198.51.100.7:50001`, `[2001:db8::1]:443`: a port would give each connection of a client a key of its own.
    const address = withoutPort(ip);
    if (address.indexOf(':') === -1) return address;
    const cache = this.ipv6Keys;
    let key = cache.get(address);
    if (key === undefined) {
      if (cache.size >= IPV6_KEY_CACHE_SIZE) cache.clear();
      key = ipKey(address, this.ipv6Subnet);
      cache.set(address, key);
    }
    return key;
  };

  private checkTrustAll(req: Req): void {
    this.trustChecked = true;
    const binding = this.binding;
    if (!binding.trustsAllProxies(req)) return;
    emitWarning(
      `The framework trusts every proxy, so the client IP the rate limit keys on is the leftmost X-Forwarded-For entry, which a client writes itself: by sending a new one with each request, a client gets a fresh quota each time. ${binding.trustAllProxiesAdvice}, or pass key(req). (rl ${binding.owner}, warned once per middleware.) See ${errorDocsUrl('RL_TRUST_ALL_PROXIES')}`,
      { code: 'RL_TRUST_ALL_PROXIES' },
    );
  }
}
