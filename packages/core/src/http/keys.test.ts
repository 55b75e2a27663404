import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatIPv6, hasForwardingHeader, ipKey, parseIPv6, parseIPv6Subnet, withoutPort } from './keys.js';
import { resolvesForgedClient, trustsEveryAddress } from './trust-probe.js';

describe('ipKey', () => {
  it.each([
    ['203.0.113.7', 56, '203.0.113.7'],
    ['::ffff:203.0.113.7', 56, '203.0.113.7'],
    ['::ffff:cb00:7107', 56, '203.0.113.7'],
    ['2001:db8:abcd:12ff:1:2:3:4', 56, '2001:db8:abcd:1200::/56'],
    ['2001:DB8:ABCD:1234::1', 56, '2001:db8:abcd:1200::/56'],
    ['2001:db8:abcd:1234::1', 64, '2001:db8:abcd:1234::/64'],
    ['2001:db8:abcd:1234::1', 48, '2001:db8:abcd::/48'],
    ['2001:db8:abcd:1234::1', 60, '2001:db8:abcd:1230::/60'],
    ['2001:db8::1', false, '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', 128, '2001:db8::1'],
    ['fe80::1%eth0', 56, 'fe80::/56'],
    ['[2001:db8::1]', 56, '2001:db8::/56'],
    ['::1', 56, '::/56'],
    ['not:an:address', 56, 'not:an:address'],
    ['1:2:3:4:5:6:7:8:9', 56, '1:2:3:4:5:6:7:8:9'],
  ] as const)('%s /%s → %s', (ip, subnet, expected) => {
    expect(ipKey(ip, subnet)).toBe(expected);
  });

  it.each([
    // IPv4-compatible (deprecated, RFC 4291 2.5.5.1): the IPv4 client, in every spelling, with or without a port.
    ['::192.0.2.1', '192.0.2.1'],
    ['::c000:201', '192.0.2.1'],
    ['0:0:0:0:0:0:192.0.2.1', '192.0.2.1'],
    ['[::192.0.2.1]:443', '192.0.2.1'],
    ['::1.0.0.0', '1.0.0.0'],
    ['::255.255.255.255', '255.255.255.255'],
    // Not IPv4 clients: the unspecified address, loopback, and the rest of ::/104 (0.0.0.0/8) stay IPv6.
    ['::', '::/56'],
    ['::1', '::/56'],
    ['::0.0.0.2', '::/56'],
    ['::0.255.255.255', '::/56'],
    // Neither mapped nor compatible: IPv6, grouped.
    ['::1:0:192.0.2.1', '::/56'],
    ['::ffff:0:192.0.2.1', '::/56'],
  ] as const)('%s → %s', (ip, expected) => {
    expect(ipKey(ip)).toBe(expected);
  });

  it('keys an IPv4 client the same in dotted, mapped, compatible and hex forms (first octet 1..255)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        fc.constantFrom(56, 64, 128, false as const),
        (a, b, c, d, subnet) => {
          const v4 = `${a}.${b}.${c}.${d}`;
          const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
          for (const form of [v4, `::ffff:${v4}`, `::${v4}`, `::${hex}`, `::ffff:${hex}`, `[::${v4}]:8080`])
            expect(ipKey(form, subnet)).toBe(v4);
        },
      ),
    );
  });

  it('keeps every address of ::/104 (::, ::1, ...) an IPv6 key', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xff }), fc.integer({ min: 0, max: 0xffff }), (high, low) => {
        expect(ipKey(`::${high.toString(16)}:${low.toString(16)}`)).toBe('::/56');
        expect(ipKey(`::${high.toString(16)}:${low.toString(16)}`, false)).toBe(
          formatIPv6([0, 0, 0, 0, 0, 0, high, low]),
        );
      }),
    );
  });

  it('gives every address of one /56 the same key, and the next /56 another', () => {
    const a = ipKey('2001:db8:1:ff00::1');
    expect(ipKey('2001:db8:1:ffff:ffff:ffff:ffff:ffff')).toBe(a);
    expect(ipKey('2001:db8:1:fe00::1')).not.toBe(a);
  });
});

describe('a port in a forwarded address is not part of the key', () => {
  // The form some cloud load balancers write in X-Forwarded-For: with the port, every connection of one client had a key of its own.
  it.each([
    // [address as the framework reports it, withoutPort, ipKey /56, ipKey whole addresses]
    ['198.51.100.7:50001', '198.51.100.7', '198.51.100.7', '198.51.100.7'],
    ['198.51.100.7:0', '198.51.100.7', '198.51.100.7', '198.51.100.7'],
    ['198.51.100.7:65535', '198.51.100.7', '198.51.100.7', '198.51.100.7'],
    ['198.51.100.7', '198.51.100.7', '198.51.100.7', '198.51.100.7'],
    ['[2001:db8::1]:443', '2001:db8::1', '2001:db8::/56', '2001:db8::1'],
    ['[2001:DB8:0::1]:8080', '2001:DB8:0::1', '2001:db8::/56', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1', '2001:db8::/56', '2001:db8::1'],
    ['[fe80::1%eth0]:443', 'fe80::1%eth0', 'fe80::/56', 'fe80::1'],
    // IPv4-mapped IPv6, with or without a port: the IPv4 address, as before.
    ['[::ffff:198.51.100.7]:443', '::ffff:198.51.100.7', '198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '::ffff:198.51.100.7', '198.51.100.7', '198.51.100.7'],
    // A plain IPv6 address has colons and no port: its last group stays.
    ['2001:db8::1', '2001:db8::1', '2001:db8::/56', '2001:db8::1'],
    ['2001:db8::1:443', '2001:db8::1:443', '2001:db8::/56', '2001:db8::1:443'],
    ['::1', '::1', '::/56', '::1'],
    // Not one of the two forms: unchanged.
    ['198.51.100.7:65536', '198.51.100.7:65536', '198.51.100.7:65536', '198.51.100.7:65536'],
    ['198.51.100.7:', '198.51.100.7:', '198.51.100.7:', '198.51.100.7:'],
    ['198.51.100.7:http', '198.51.100.7:http', '198.51.100.7:http', '198.51.100.7:http'],
    ['300.51.100.7:80', '300.51.100.7:80', '300.51.100.7:80', '300.51.100.7:80'],
    ['proxy.internal:8080', 'proxy.internal:8080', 'proxy.internal:8080', 'proxy.internal:8080'],
    ['[2001:db8::1]:99999', '[2001:db8::1]:99999', '[2001:db8::1]:99999', '[2001:db8::1]:99999'],
    ['[2001:db8::1]443', '[2001:db8::1]443', '[2001:db8::1]443', '[2001:db8::1]443'],
    ['[2001:db8::1', '[2001:db8::1', '[2001:db8::1', '[2001:db8::1'],
  ] as const)('%s', (ip, address, grouped, whole) => {
    expect(withoutPort(ip)).toBe(address);
    expect(ipKey(ip)).toBe(grouped);
    expect(ipKey(ip, false)).toBe(whole);
  });
});

describe('parseIPv6 and formatIPv6', () => {
  it('parses embedded IPv4 tails and compresses the longest zero run (RFC 5952)', () => {
    expect(parseIPv6('64:ff9b::192.0.2.33')).toEqual([0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x221]);
    expect(formatIPv6([1, 0, 0, 2, 0, 0, 0, 3])).toBe('1:0:0:2::3');
    expect(formatIPv6([1, 0, 2, 3, 4, 5, 6, 7])).toBe('1:0:2:3:4:5:6:7');
    expect(parseIPv6('::ffff:300.1.1.1')).toBeUndefined();
    expect(parseIPv6('1::2::3')).toBeUndefined();
  });
});

describe('parseIPv6Subnet', () => {
  it('defaults to 56 and accepts 1..128 or false', () => {
    expect(parseIPv6Subnet(undefined, 'f')).toBe(56);
    expect(parseIPv6Subnet(false, 'f')).toBe(false);
    expect(parseIPv6Subnet(64, 'f')).toBe(64);
    for (const bad of [0, 129, 56.5, '56', true])
      expect(() => parseIPv6Subnet(bad, 'f')).toThrowError(/Invalid option f/);
  });
});

describe('the trust-all-proxies probe', () => {
  // proxy-addr's trust functions as Express and Fastify compile them (hop 0 is the socket peer).
  const loopback = (address: string) => address === '127.0.0.1' || address === '::1';
  it.each([
    ['trust everything', () => true, true],
    ['trust every hop but answers truthy, not true', () => 1, false],
    ['a hop count of 1', (_: string, hop: number) => hop < 1, false],
    ['a hop count of 15', (_: string, hop: number) => hop < 15, false],
    ['loopback', loopback, false],
    // Every client of one family names itself: as dangerous as trusting all.
    ['every IPv4 address (0.0.0.0/0)', (address: string) => address.indexOf(':') === -1, true],
    ['every IPv6 address (::/0)', (address: string) => address.indexOf(':') !== -1, true],
    ['the private IPv4 ranges', (address: string) => /^(10|192\.168)\./.test(address), false],
    ['trust nothing', () => false, false],
    [
      'a function that throws',
      () => {
        throw new Error('bad address');
      },
      false,
    ],
  ] as const)('%s → %s', (_, trust, expected) => {
    expect(trustsEveryAddress(trust)).toBe(expected);
  });

  it('sends a forged client behind 16 forwarding hops (the socket peer included), and sees whether the framework resolves it', () => {
    const seen: string[] = [];
    // proxy-addr's walk: the socket peer, then X-Forwarded-For from the right; the first untrusted hop is the client.
    const resolve =
      (trust: (address: string, hop: number) => boolean) =>
      (raw: { headers: { 'x-forwarded-for': string }; socket: { remoteAddress: string } }) => {
        const chain = [raw.socket.remoteAddress, ...raw.headers['x-forwarded-for'].split(/\s*,\s*/).reverse()];
        seen.push(...chain);
        for (let hop = 0; hop < chain.length - 1; hop++) if (!trust(chain[hop]!, hop)) return chain[hop];
        return chain[chain.length - 1];
      };
    expect(resolvesForgedClient(resolve(() => true))).toBe(true);
    expect(seen).toHaveLength(17);
    expect(resolvesForgedClient(resolve((address) => address.indexOf(':') === -1))).toBe(true);
    expect(resolvesForgedClient(resolve((_, hop) => hop < 15))).toBe(false);
    expect(resolvesForgedClient(resolve(loopback))).toBe(false);
    expect(
      resolvesForgedClient(() => {
        throw new Error('not a request');
      }),
    ).toBe(false);
  });
});

describe('hasForwardingHeader: a forwarding header that names something', () => {
  it.each([
    [{ 'x-forwarded-for': '203.0.113.9' }, true],
    [{ 'x-forwarded-for': '203.0.113.9, 10.0.0.1' }, true],
    [{ forwarded: 'for=203.0.113.9' }, true],
    [{}, false],
    [{ 'x-forwarded-for': '' }, false],
    [{ 'x-forwarded-for': ' , ,' }, false],
    [{ forwarded: '' }, false],
  ])('%j: %s', (headers, expected) => {
    expect(hasForwardingHeader(headers)).toBe(expected);
  });
});
