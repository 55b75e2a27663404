import { expect, it } from 'vitest';
import { calendarWindow, concurrency, fixedWindow, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import { T0, type SuiteContext } from './context.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** An instant given in UTC. */
const utc = (iso: string): number => Date.parse(`${iso}Z`);

/** Quotas as API products sell them: calendar periods in a time zone beside a burst limit, and bans held in the store. */
export function quotaTests(t: SuiteContext): void {
  it("1000 per calendar month in Europe/Paris beside a burst bucket: w is the month's real length; at 23:59:30 local on its last day, Retry-After and t are 30", async () => {
    // 2027-02-28T22:59:30Z is 23:59:30 in Paris (UTC+1 in winter), the last day of a 28-day February.
    let now = utc('2027-02-28T22:59:30');
    const monthly = calendarWindow({ limit: 3, period: 'month', timeZone: 'Europe/Paris' });
    const app = await t.open({ middlewares: [{ limits: [{ algorithm: monthly }, { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) }], clock: () => now }] });
    for (let i = 1; i <= 3; i++) {
      const res = await app.request('/');
      expect(res.status).toBe(200);
      expect(members(res.headers['ratelimit-policy'])[0]).toEqual({ name: '3-per-month', params: { q: 3, w: (28 * DAY) / 1000 } });
      expect(members(res.headers['ratelimit'])[0]).toEqual({ name: '3-per-month', params: { r: 3 - i, t: 30 } });
    }
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('30');
    expect(members(denied.headers['ratelimit'])[0]).toEqual({ name: '3-per-month', params: { r: 0, t: 30 } });
    expect(denied.body).toMatchObject({ status: 429, 'violated-policies': ['3-per-month'], retryAfter: 30 });
    // March begins at local midnight; it is 31 days less the hour its last Sunday skips (DST).
    now = utc('2027-02-28T23:00:00');
    const march = await app.request('/');
    expect(march.status).toBe(200);
    expect(members(march.headers['ratelimit-policy'])[0]).toEqual({ name: '3-per-month', params: { q: 3, w: (31 * DAY - HOUR) / 1000 } });
    expect(members(march.headers['ratelimit'])[0]).toEqual({ name: '3-per-month', params: { r: 2, t: (31 * DAY - HOUR) / 1000 } });
  });

  it("blockKey bans a user in every limit: 429 with the ban's time left as Retry-After, nothing charged, other users served; unblockKey admits it again", async () => {
    let now = T0;
    const user = (req: unknown) => t.adapter.view(req).header('x-user') ?? 'anonymous';
    const app = await t.open({ middlewares: [{ key: user, bans: true, clock: () => now, limits: [{ algorithm: fixedWindow({ limit: 5, window: '1m' }) }, { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) }] }] });
    const as = (name: string) => ({ headers: { 'x-user': name } });
    expect((await app.request('/', as('mallory'))).status).toBe(200);
    await app.controls.blockKey('mallory', '1h');
    now = T0 + 60_000;
    for (let i = 0; i < 3; i++) {
      const banned = await app.request('/', as('mallory'));
      expect(banned.status).toBe(429);
      expect(banned.headers['retry-after']).toBe(String(3600 - 60));
      expect(banned.body).toMatchObject({ status: 429, retryAfter: 3600 - 60 });
    }
    expect((await app.request('/', as('alice'))).status).toBe(200);
    await app.controls.unblockKey('mallory');
    // The fixed window has rolled over; the bucket kept its 9 tokens (plus the minute's refill, capped): the ban charged nothing.
    const back = await app.request('/', as('mallory'));
    expect(back.status).toBe(200);
    expect(members(back.headers['ratelimit-policy']).length).toBe(2);
    expect(back.body).toEqual({ remaining: 4 });
  });

  it('bans: true beside a concurrency limit: the rate limits are banned, the permit limit takes no ban', async () => {
    const app = await t.open({ middlewares: [{ bans: true, limits: [{ algorithm: fixedWindow({ limit: 5, window: '1m' }) }, { algorithm: concurrency({ limit: 2 }) }] }] });
    expect((await app.request('/')).status).toBe(200);
    await app.controls.blockKey('127.0.0.1', '1m');
    const banned = await app.request('/');
    // The default key is the client address: the ban is on it.
    expect(banned.status).toBe(429);
    await app.controls.unblockKey('127.0.0.1');
    expect((await app.request('/')).status).toBe(200);
  });

  it('blockKey on a middleware without bans: true is a typed error naming the option', async () => {
    const app = await t.open({ middlewares: [{ algorithm: fixedWindow({ limit: 5, window: '1m' }) }] });
    await expect(app.controls.blockKey('k', '1h')).rejects.toMatchObject({ code: 'RL_UNSUPPORTED', message: expect.stringMatching(/bans: true/) });
  });
}

/** Overrides held in the store, through the middleware's handle (Fastify: `app.rateLimit`). */
export function overrideTests(t: SuiteContext): void {
  const user = (req: unknown) => t.adapter.view(req).header('x-user') ?? 'anonymous';
  const as = (name: string) => ({ headers: { 'x-user': name } });

  it("setOverride raises one customer's limit in the limit of its kind: RateLimit-Policy's q and RateLimit's r follow it; other customers keep the limit's own; clearOverride restores it", async () => {
    const now = T0;
    const app = await t.open({ middlewares: [{ key: user, overrides: true, clock: () => now, limits: [{ algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) }, { algorithm: fixedWindow({ limit: 2, window: '1h' }) }] }] });
    expect((await app.request('/', as('acme'))).status).toBe(200);
    expect((await app.request('/', as('acme'))).status).toBe(200);
    expect((await app.request('/', as('acme'))).status).toBe(429);
    await app.controls.setOverride('acme', fixedWindow({ limit: 100, window: '1h' }), { ttl: '30d' });
    const raised = await app.request('/', as('acme'));
    expect(raised.status).toBe(200);
    expect(members(raised.headers['ratelimit-policy'])[1]).toEqual({ name: '100-in-1h', params: { q: 100, w: 3600 } });
    expect(members(raised.headers['ratelimit'])[1]).toMatchObject({ name: '100-in-1h', params: { r: 97 } });
    const other = await app.request('/', as('globex'));
    expect(members(other.headers['ratelimit-policy'])[1]).toEqual({ name: '2-in-1h', params: { q: 2, w: 3600 } });
    expect(await app.controls.getOverride('acme')).toMatchObject({ algorithm: { kind: 'fixed-window', limit: 100 }, expiresAt: T0 + 30 * DAY });
    await app.controls.clearOverride('acme');
    const back = await app.request('/', as('acme'));
    expect(back.status).toBe(429);
    expect(members(back.headers['ratelimit-policy'])[1]).toEqual({ name: '2-in-1h', params: { q: 2, w: 3600 } });
  });

  it('an override a middleware cannot place is a typed error before any limit changes: no overrides: true, two limits of its kind without a name, a name that is no limit', async () => {
    const plain = await t.open({ middlewares: [{ algorithm: fixedWindow({ limit: 5, window: '1m' }) }] });
    await expect(plain.controls.setOverride('k', fixedWindow({ limit: 9, window: '1m' }), { ttl: '1h' })).rejects.toMatchObject({ code: 'RL_UNSUPPORTED', message: expect.stringMatching(/overrides: true/) });
    await plain.close();
    const app = await t.open({ middlewares: [{ overrides: true, limits: [{ name: 'burst', algorithm: fixedWindow({ limit: 5, window: '1s' }) }, { name: 'daily', algorithm: fixedWindow({ limit: 1000, window: '1d' }) }] }] });
    await expect(app.controls.setOverride('k', fixedWindow({ limit: 9, window: '1s' }), { ttl: '1h' })).rejects.toMatchObject({ code: 'RL_INVALID_OPTION', message: expect.stringMatching(/burst, daily/) });
    await expect(app.controls.setOverride('k', fixedWindow({ limit: 9, window: '1s' }), { ttl: '1h', limit: 'hourly' })).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
    await expect(app.controls.setOverride('k', tokenBucket({ capacity: 9, refillRate: 1 }), { ttl: '1h' })).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
    await app.controls.setOverride('127.0.0.1', fixedWindow({ limit: 1, window: '1d' }), { ttl: '1h', limit: 'daily' });
    expect((await app.request('/')).status).toBe(200);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({ 'violated-policies': ['daily'] });
  });
}

/** A deny list kept elsewhere (`deny(req)`), beside an allow list (`skip`). */
export function denyListTests(t: SuiteContext): void {
  const user = (req: unknown) => t.adapter.view(req).header('x-user') ?? 'anonymous';
  const as = (name: string) => ({ headers: { 'x-user': name } });

  it("deny(req) refuses a listed client with a ban's 429 (Retry-After its duration, every limit's policy) and charges no limit; skip wins over it; an async answer works; a bad answer is an error", async () => {
    const listed = new Map<string, boolean | string>([['mallory', true], ['eve', '10m'], ['bob', 'soon']]);
    const app = await t.open({
      middlewares: [{
        key: user,
        skip: (req: unknown) => user(req) === 'admin',
        deny: async (req: unknown) => listed.get(user(req)) ?? user(req) === 'admin',
        limits: [{ algorithm: fixedWindow({ limit: 2, window: '1m' }) }, { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) }],
      }],
    });
    const mallory = await app.request('/', as('mallory'));
    expect(mallory.status).toBe(429);
    expect(mallory.headers['retry-after']).toBe('3600');
    expect(members(mallory.headers['ratelimit-policy']).map((m) => m.name)).toEqual(['2-in-1m', '10-in-10s']);
    expect(mallory.body).toMatchObject({ status: 429, retryAfter: 3600 });
    expect((await app.request('/', as('eve'))).headers['retry-after']).toBe('600');
    // An allow list wins: skipped before deny is asked.
    expect((await app.request('/', as('admin'))).status).toBe(200);
    // Nothing was charged: alice has her two requests, then the limit denies.
    expect((await app.request('/', as('alice'))).status).toBe(200);
    expect((await app.request('/', as('alice'))).status).toBe(200);
    expect((await app.request('/', as('alice'))).status).toBe(429);
    const bad = await app.request('/', as('bob'));
    expect(bad.status).toBe(500);
    expect(bad.body).toMatchObject({ code: 'RL_INVALID_OPTION' });
  });
}
