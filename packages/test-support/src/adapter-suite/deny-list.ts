import { expect, it } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import type { SuiteContext } from './context.js';
import { usersByHeader } from './users.js';

/** A deny list kept elsewhere (`deny(req)`), beside an allow list (`skip`). */
export function denyListTests(t: SuiteContext): void {
  const { user, as } = usersByHeader(t);

  it("deny(req) refuses a listed client with a ban's 429 (Retry-After its duration, every limit's policy) and charges no limit; skip wins over it; an async answer works; a bad answer is an error", async () => {
    const listed = new Map<string, boolean | string>([
      ['mallory', true],
      ['eve', '10m'],
      ['bob', 'soon'],
    ]);
    const app = await t.open({
      middlewares: [
        {
          key: user,
          skip: (req: unknown) => user(req) === 'admin',
          deny: async (req: unknown) => listed.get(user(req)) ?? user(req) === 'admin',
          limits: [
            { algorithm: fixedWindow({ limit: 2, window: '1m' }) },
            { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) },
          ],
        },
      ],
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
