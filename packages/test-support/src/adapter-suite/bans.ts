import { expect, it } from 'vitest';
import { concurrency, fixedWindow, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import { T0, type SuiteContext } from './context.js';
import { usersByHeader } from './users.js';

/** Bans held in the store (`bans: true`, the middleware's `blockKey` and `unblockKey`), in every rate limit. */
export function banTests(t: SuiteContext): void {
  const { user, as } = usersByHeader(t);

  it("blockKey bans a user in every limit: 429 with the ban's time left as Retry-After, nothing charged, other users served; unblockKey admits it again", async () => {
    let now = T0;
    const app = await t.open({
      middlewares: [
        {
          key: user,
          bans: true,
          clock: () => now,
          limits: [
            { algorithm: fixedWindow({ limit: 5, window: '1m' }) },
            { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) },
          ],
        },
      ],
    });
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
    const app = await t.open({
      middlewares: [
        {
          bans: true,
          limits: [{ algorithm: fixedWindow({ limit: 5, window: '1m' }) }, { algorithm: concurrency({ limit: 2 }) }],
        },
      ],
    });
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
    await expect(app.controls.blockKey('k', '1h')).rejects.toMatchObject({
      code: 'RL_UNSUPPORTED',
      message: expect.stringMatching(/bans: true/),
    });
  });
}
