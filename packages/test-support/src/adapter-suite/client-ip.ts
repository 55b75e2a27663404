import { expect, it } from 'vitest';
import { fixedWindow } from '@rl/core';
import { collectWarnings } from '../capture.js';
import { nextTurn } from '../http-client.js';
import type { MountedApp } from './adapter.js';
import type { SuiteContext } from './context.js';

const from = async (app: MountedApp, ip: string): Promise<number> =>
  (await app.request('/', { headers: { 'x-forwarded-for': ip } })).status;

/**
 * Checks that `app` (a limit of 1) keys requests by client: each row is one client's addresses, sent
 * in turn as X-Forwarded-For, row after row. The first of a row is admitted (200), the others share
 * its key and are denied (429); a later row is another key, admitted afresh.
 */
async function expectOneKeyPerClient(app: MountedApp, clients: readonly (readonly string[])[]): Promise<void> {
  const answered: [string, number][] = [];
  const expected: [string, number][] = [];
  for (const addresses of clients)
    for (const [i, ip] of addresses.entries()) {
      answered.push([ip, await from(app, ip)]);
      expected.push([ip, i === 0 ? 200 : 429]);
    }
  expect(answered).toEqual(expected);
}

/** The default key: the client IP, X-Forwarded-For only behind a trusted proxy (with a warning when every proxy is trusted), IPv6 grouped by subnet. */
export function clientIpTests(t: SuiteContext): void {
  const algorithm = fixedWindow({ limit: 1, window: '1m' });

  it('ignores X-Forwarded-For without trust proxy, and warns once', async () => {
    await collectWarnings('RL_TRUST_PROXY', async (warnings) => {
      const app = await t.open({ middlewares: [{ algorithm }] });
      // Both forwarded addresses are one client: the connection's.
      await expectOneKeyPerClient(app, [['203.0.113.1', '203.0.113.2']]);
      await nextTurn();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toMatch(/trust proxy/);
    });
  });

  it('keys on the forwarded client under trust proxy, grouping IPv6 by /56, without a warning', async () => {
    await collectWarnings('RL_TRUST_PROXY', async (warnings) => {
      const app = await t.open({ trustProxy: true, middlewares: [{ algorithm }] });
      await expectOneKeyPerClient(app, [
        // Same /56, other addresses: the same client.
        ['2001:db8:abcd:1200::1', '2001:db8:abcd:12ff:ffff::9', '2001:db8:abcd:12ff::2'],
        ['2001:db8:abcd:1300::1'],
        ['203.0.113.1'],
        ['203.0.113.2'],
      ]);
      await nextTurn();
      expect(warnings).toHaveLength(0);
    });
  });

  it('keys a forwarded ip:port on the address alone: one key per client, not one per connection', async () => {
    // Whole IPv6 addresses, so that a wrongly stripped last group would show as a shared key.
    const app = await t.open({ trustProxy: true, middlewares: [{ algorithm, ipv6Subnet: false }] });
    await expectOneKeyPerClient(app, [
      ['198.51.100.7:50001', '198.51.100.7:50002', '198.51.100.7'],
      ['[2001:db8::1]:443', '[2001:db8::1]:444', '2001:db8::1'],
      // A plain IPv6 address has no port: 2001:db8::1:443 is another address.
      ['2001:db8::1:443'],
      // IPv4-mapped IPv6 in brackets with a port: the IPv4 client.
      ['[::ffff:198.51.100.8]:443', '198.51.100.8:80'],
    ]);
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
    await expectOneKeyPerClient(app, [['2001:db8:abcd:1200::1', '2001:db8:abcd:1200::2'], ['2001:db8:abcd:1201::1']]);
  });
}
