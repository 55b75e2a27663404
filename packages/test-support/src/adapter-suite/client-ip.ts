import { expect, it } from 'vitest';
import { fixedWindow } from '@rl/core';
import { collectWarnings } from '../capture.js';
import { nextTurn } from '../http-client.js';
import type { MountedApp } from './adapter.js';
import type { SuiteContext } from './context.js';

const from = async (app: MountedApp, ip: string): Promise<number> =>
  (await app.request('/', { headers: { 'x-forwarded-for': ip } })).status;

/** The default key: the client IP, X-Forwarded-For only behind a trusted proxy (with a warning when every proxy is trusted), IPv6 grouped by subnet. */
export function clientIpTests(t: SuiteContext): void {
  const algorithm = fixedWindow({ limit: 1, window: '1m' });

  it('ignores X-Forwarded-For without trust proxy, and warns once', async () => {
    await collectWarnings('RL_TRUST_PROXY', async (warnings) => {
      const app = await t.open({ middlewares: [{ algorithm }] });
      expect(await from(app, '203.0.113.1')).toBe(200);
      expect(await from(app, '203.0.113.2')).toBe(429);
      await nextTurn();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toMatch(/trust proxy/);
    });
  });

  it('keys on the forwarded client under trust proxy, grouping IPv6 by /56, without a warning', async () => {
    await collectWarnings('RL_TRUST_PROXY', async (warnings) => {
      const app = await t.open({ trustProxy: true, middlewares: [{ algorithm }] });
      expect(await from(app, '2001:db8:abcd:1200::1')).toBe(200);
      // Same /56, other addresses: the same client.
      expect(await from(app, '2001:db8:abcd:12ff:ffff::9')).toBe(429);
      expect(await from(app, '2001:db8:abcd:12ff::2')).toBe(429);
      expect(await from(app, '2001:db8:abcd:1300::1')).toBe(200);
      expect(await from(app, '203.0.113.1')).toBe(200);
      expect(await from(app, '203.0.113.2')).toBe(200);
      await nextTurn();
      expect(warnings).toHaveLength(0);
    });
  });

  it('keys a forwarded ip:port on the address alone: one key per client, not one per connection', async () => {
    // Whole IPv6 addresses, so that a wrongly stripped last group would show as a shared key.
    const app = await t.open({ trustProxy: true, middlewares: [{ algorithm, ipv6Subnet: false }] });
    expect(await from(app, '198.51.100.7:50001')).toBe(200);
    expect(await from(app, '198.51.100.7:50002')).toBe(429);
    expect(await from(app, '198.51.100.7')).toBe(429);
    expect(await from(app, '[2001:db8::1]:443')).toBe(200);
    expect(await from(app, '[2001:db8::1]:444')).toBe(429);
    expect(await from(app, '2001:db8::1')).toBe(429);
    // A plain IPv6 address has no port: 2001:db8::1:443 is another address.
    expect(await from(app, '2001:db8::1:443')).toBe(200);
    // IPv4-mapped IPv6 in brackets with a port: the IPv4 client.
    expect(await from(app, '[::ffff:198.51.100.8]:443')).toBe(200);
    expect(await from(app, '198.51.100.8:80')).toBe(429);
  });

  // A client behind one proxy writes its own X-Forwarded-For; the proxy appends the address it sees (203.0.113.9).
  const forging = async (app: MountedApp): Promise<number[]> => {
    const statuses: number[] = [];
    for (const forged of ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'])
      statuses.push(await from(app, `${forged}, 203.0.113.9`));
    return statuses;
  };

  it('warns once per middleware (RL_TRUST_ALL_PROXIES) when the framework trusts every proxy: a client rotating X-Forwarded-For gets a fresh quota each time', async () => {
    await collectWarnings('RL_TRUST_ALL_PROXIES', async (warnings) => {
      const app = await t.open({
        trustProxy: 'all',
        middlewares: [{ algorithm }, { limits: [{ name: 'second', algorithm }] }],
      });
      // The reason for the warning: a limit of 1, four requests admitted from one client.
      expect(await forging(app)).toEqual([200, 200, 200, 200]);
      await nextTurn();
      expect(warnings).toHaveLength(2);
      expect(warnings[0]!.message).toMatch(/trusts every proxy/);
      expect(warnings[0]!.message).toMatch(/fresh quota/);
      expect(warnings[0]!.message).toMatch(/instead of true|maxIpsCount/);
    });
  });

  it.each([
    ['no trust proxy', undefined],
    ['one proxy by count', true],
    ['the proxy by address', 'addresses'],
  ] as const)('does not warn RL_TRUST_ALL_PROXIES under %s', async (_, trustProxy) => {
    await collectWarnings('RL_TRUST_ALL_PROXIES', async (warnings) => {
      const app = await t.open({ ...(trustProxy !== undefined && { trustProxy }), middlewares: [{ algorithm }] });
      await forging(app);
      await nextTurn();
      expect(warnings).toHaveLength(0);
    });
  });

  it.each([
    ['one proxy by count', true],
    ['the proxy by address', 'addresses'],
  ] as const)('keys a forging client on the address its proxy saw under %s: one quota', async (_, trustProxy) => {
    const app = await t.open({ trustProxy, middlewares: [{ algorithm }] });
    expect(await forging(app)).toEqual([200, 429, 429, 429]);
  });

  it('does not warn RL_TRUST_ALL_PROXIES when the middleware is given a key function (the user chose the key)', async () => {
    await collectWarnings('RL_TRUST_ALL_PROXIES', async (warnings) => {
      const app = await t.open({ trustProxy: 'all', middlewares: [{ algorithm, key: () => 'everyone' }] });
      expect(await forging(app)).toEqual([200, 429, 429, 429]);
      await nextTurn();
      expect(warnings).toHaveLength(0);
    });
  });

  it('groups IPv6 by the configured prefix length', async () => {
    const app = await t.open({ trustProxy: true, middlewares: [{ algorithm, ipv6Subnet: 64 }] });
    expect(await from(app, '2001:db8:abcd:1200::1')).toBe(200);
    expect(await from(app, '2001:db8:abcd:1201::1')).toBe(200);
    expect(await from(app, '2001:db8:abcd:1200::2')).toBe(429);
  });
}
