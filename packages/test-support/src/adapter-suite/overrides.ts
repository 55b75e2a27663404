import { expect, it } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import { T0, type SuiteContext } from './context.js';
import { usersByHeader } from './users.js';

const DAY = 24 * 3_600_000;

/** Overrides held in the store, through the middleware's handle (Fastify: `app.rateLimit`). */
export function overrideTests(t: SuiteContext): void {
  const { user, as } = usersByHeader(t);

  it("setOverride raises one customer's limit in the limit of its kind: RateLimit-Policy's q and RateLimit's r follow it; other customers keep the limit's own; clearOverride restores it", async () => {
    // The suite's clock: frozen at T0.
    const app = await t.open({
      middlewares: [
        {
          key: user,
          overrides: true,
          limits: [
            { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) },
            { algorithm: fixedWindow({ limit: 2, window: '1h' }) },
          ],
        },
      ],
    });
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
    expect(await app.controls.getOverride('acme')).toMatchObject({
      algorithm: { kind: 'fixed-window', limit: 100 },
      expiresAt: T0 + 30 * DAY,
    });
    await app.controls.clearOverride('acme');
    const back = await app.request('/', as('acme'));
    expect(back.status).toBe(429);
    expect(members(back.headers['ratelimit-policy'])[1]).toEqual({ name: '2-in-1h', params: { q: 2, w: 3600 } });
  });

  it('an override a middleware cannot place is a typed error before any limit changes: no overrides: true, two limits of its kind without a name, a name that is no limit', async () => {
    const plain = await t.open({ middlewares: [{ algorithm: fixedWindow({ limit: 5, window: '1m' }) }] });
    await expect(
      plain.controls.setOverride('k', fixedWindow({ limit: 9, window: '1m' }), { ttl: '1h' }),
    ).rejects.toMatchObject({ code: 'RL_UNSUPPORTED', message: expect.stringMatching(/overrides: true/) });
    await plain.close();
    const app = await t.open({
      middlewares: [
        {
          overrides: true,
          limits: [
            { name: 'burst', algorithm: fixedWindow({ limit: 5, window: '1s' }) },
            { name: 'daily', algorithm: fixedWindow({ limit: 1000, window: '1d' }) },
          ],
        },
      ],
    });
    await expect(
      app.controls.setOverride('k', fixedWindow({ limit: 9, window: '1s' }), { ttl: '1h' }),
    ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION', message: expect.stringMatching(/burst, daily/) });
    await expect(
      app.controls.setOverride('k', fixedWindow({ limit: 9, window: '1s' }), { ttl: '1h', limit: 'hourly' }),
    ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
    await expect(
      app.controls.setOverride('k', tokenBucket({ capacity: 9, refillRate: 1 }), { ttl: '1h' }),
    ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
    await app.controls.setOverride('127.0.0.1', fixedWindow({ limit: 1, window: '1d' }), { ttl: '1h', limit: 'daily' });
    expect((await app.request('/')).status).toBe(200);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({ 'violated-policies': ['daily'] });
  });
}
