import { requestHeader, type RequestHeaders } from './binding.js';
import { InvalidOptionError } from '../errors.js';

/**
 * The IPv6 prefix length used to group clients by default. A /56 is what many ISPs hand one
 * customer, so a client rotating through the addresses of its own subnet still shares one limit.
 */
export const DEFAULT_IPV6_SUBNET = 56;

/**
 * The rate-limit key for a client IP address.
 *
 * - IPv4 addresses (and anything without a `:`) are returned unchanged.
 * - A port is stripped (see {@link withoutPort}): `198.51.100.7:50001` is `198.51.100.7`, and
 *   `[2001:db8::1]:443` is keyed as `2001:db8::1`, so a client has one key, not one per connection.
 * - IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) are returned as the IPv4 address, so one client
 *   has one key whether it arrives over IPv4 or a dual-stack socket. So are the deprecated
 *   IPv4-compatible ones (`::192.0.2.1`, also written `::c000:201`; RFC 4291 2.5.5.1), or every
 *   client written that way would share the key `::/56`; but not those whose IPv4 address would be
 *   in 0.0.0.0/8 (`::`, `::1`, `::2`, …), which are not IPv4 clients.
 * - Other IPv6 addresses are masked to their first `ipv6Subnet` bits and returned in canonical form
 *   with the prefix length, for example `2001:db8:1200::/56`. `ipv6Subnet: false` (or 128) keeps the
 *   full address (canonical form, no prefix length).
 * - Anything else with a `:` is returned as it is, without a recognised port (never throws: the value
 *   came from the framework, not from options).
 */
export function ipKey(ip: string, ipv6Subnet: number | false = DEFAULT_IPV6_SUBNET): string {
  if (ip.indexOf(':') === -1) return ip;
  const address = withoutPort(ip);
  if (address.indexOf(':') === -1) return address;
  const groups = parseIPv6(address);
  if (groups === undefined) return address;
  // Mapped (::ffff:0:0/96) or compatible (::/96 outside ::/104, which holds :: and ::1).
  if (
    groups[0] === 0 &&
    groups[1] === 0 &&
    groups[2] === 0 &&
    groups[3] === 0 &&
    groups[4] === 0 &&
    (groups[5] === 0xffff || (groups[5] === 0 && groups[6]! >= 0x100))
  ) {
    return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  }
  if (ipv6Subnet === false || ipv6Subnet >= 128) return formatIPv6(groups);
  let bits = ipv6Subnet;
  for (let i = 0; i < 8; i++) {
    if (bits >= 16) bits -= 16;
    else {
      groups[i] = groups[i]! & ((0xffff << (16 - bits)) & 0xffff);
      bits = 0;
    }
  }
  return `${formatIPv6(groups)}/${ipv6Subnet}`;
}

/** An IPv4 address and a port: `198.51.100.7:50001` (octets and port checked by {@link withoutPort}). */
const IPV4_WITH_PORT = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):(\d{1,5})$/;
/** A port after a bracketed IPv6 address: `]:443`. */
const BRACKET_PORT = /^\]:(\d{1,5})$/;

/**
 * `ip` without its port, as some load balancers write a client in `X-Forwarded-For` or `Forwarded`:
 * `198.51.100.7:50001` is `198.51.100.7`; `[2001:db8::1]:443` and `[2001:db8::1]` are `2001:db8::1`
 * (the brackets go too). Everything else is returned unchanged: a plain IPv6 address has colons but
 * no port (`2001:db8::1` is not `2001:db8:` and port 1), and a string that is neither form (a bad
 * octet, a port above 65535, a hostname) is not guessed at.
 */
export function withoutPort(ip: string): string {
  if (ip.charCodeAt(0) === 91 /* [ */) {
    const close = ip.indexOf(']');
    if (close === -1) return ip;
    if (close === ip.length - 1) return ip.slice(1, close);
    const port = BRACKET_PORT.exec(ip.slice(close));
    return port !== null && Number(port[1]) <= 65_535 ? ip.slice(1, close) : ip;
  }
  const colon = ip.indexOf(':');
  if (colon === -1 || ip.indexOf(':', colon + 1) !== -1) return ip;
  const m = IPV4_WITH_PORT.exec(ip);
  if (m === null || Number(m[5]) > 65_535) return ip;
  for (let i = 1; i <= 4; i++) if (Number(m[i]) > 255) return ip;
  return ip.slice(0, colon);
}

/** Validates the `ipv6Subnet` option: an integer from 1 to 128, or `false` for whole addresses. */
export function parseIPv6Subnet(value: unknown, field: string): number | false {
  if (value === undefined) return DEFAULT_IPV6_SUBNET;
  if (value === false) return false;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 128) {
    throw new InvalidOptionError(
      field,
      value,
      'an IPv6 prefix length from 1 to 128 (default 56), or false to key on whole addresses',
    );
  }
  return value;
}

/**
 * The eight 16-bit groups of an IPv6 address (brackets and a `%zone` are ignored, an embedded
 * dotted IPv4 tail is accepted), or `undefined` when the string is not an IPv6 address.
 */
export function parseIPv6(address: string): number[] | undefined {
  let text = address;
  if (text.charCodeAt(0) === 91 /* [ */ && text.charCodeAt(text.length - 1) === 93 /* ] */) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0]!);
  if (head === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const tail = parseGroups(halves[1]!);
  if (tail === undefined || head.length + tail.length > 7) return undefined;
  const groups = head;
  for (let fill = 8 - head.length - tail.length; fill > 0; fill--) groups.push(0);
  for (const group of tail) groups.push(group);
  return groups;
}

const HEX_GROUP = /^[0-9a-f]{1,4}$/i;
const DOTTED_IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseGroups(text: string): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i === parts.length - 1 && part.indexOf('.') !== -1) {
      const m = DOTTED_IPV4.exec(part);
      if (m === null) return undefined;
      const octets = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
      if (octets.some((o) => o > 255)) return undefined;
      groups.push((octets[0]! << 8) | octets[1]!, (octets[2]! << 8) | octets[3]!);
    } else {
      if (!HEX_GROUP.test(part)) return undefined;
      groups.push(parseInt(part, 16));
    }
  }
  return groups;
}

/** RFC 5952 text: lowercase, no leading zeros, the longest run of two or more zero groups as `::`. */
export function formatIPv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number): string =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

/**
 * True when the request carries a proxy forwarding header (`X-Forwarded-For` or `Forwarded`) that
 * names something (an empty or all-comma value forwards nothing): a sign that the app sits behind a
 * proxy. When the framework does not trust proxies, every client then shares the proxy's address and
 * its limit.
 */
export function hasForwardingHeader(headers: RequestHeaders): boolean {
  return (
    namesSomething(requestHeader(headers, 'x-forwarded-for')) || namesSomething(requestHeader(headers, 'forwarded'))
  );
}

function namesSomething(value: string | string[] | undefined): boolean {
  return value !== undefined && /[^\s,]/.test(String(value));
}
