import { expect, it } from 'vitest';
import { fixedWindow } from '@rl/core';
import { members } from '../http-client.js';
import { T0, type SuiteContext } from './context.js';

const MINUTE = 60_000;

/** Lockouts (`blockDuration`): the brute-force policy through the adapter, with the block's end in Retry-After and the RateLimit `t`. */
export function lockoutTests(t: SuiteContext): void {
  it('5 failed logins per 15 minutes, then a 1-hour block: 429 with Retry-After and t counting down to its end', async () => {
    let now = T0;
    const app = await t.open({
      middlewares: [{ algorithm: fixedWindow({ limit: 5, window: '15m' }), blockDuration: '1h', clock: () => now }],
    });
    for (let i = 0; i < 5; i++) expect((await app.request('/')).status).toBe(200);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('3600');
    expect(members(denied.headers['ratelimit'])).toEqual([{ name: '5-in-15m', params: { r: 0, t: 3600 } }]);
    expect(denied.body).toMatchObject({ status: 429, retryAfter: 3600 });
    // 20 minutes later, in another window: still blocked, 40 minutes to go.
    now = T0 + 20 * MINUTE;
    const blocked = await app.request('/');
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBe('2400');
    expect(members(blocked.headers['ratelimit'])).toEqual([{ name: '5-in-15m', params: { r: 0, t: 2400 } }]);
    // The block ends an hour after the denial; the attempts during it counted for nothing.
    now = T0 + 60 * MINUTE - 1;
    expect((await app.request('/')).headers['retry-after']).toBe('1');
    now = T0 + 60 * MINUTE;
    const free = await app.request('/');
    expect(free.status).toBe(200);
    expect(members(free.headers['ratelimit'])).toEqual([{ name: '5-in-15m', params: { r: 4, t: 900 } }]);
  });

  it('a locked-out client replaying an admitted Idempotency-Key is denied: 429 until the block ends, 0 handler runs meanwhile', async () => {
    let now = T0;
    let runs = 0;
    const idempotencyKey = (req: unknown) => t.adapter.view(req).header('idempotency-key');
    const handler = () => void runs++;
    const app = await t.open({
      middlewares: [
        {
          algorithm: fixedWindow({ limit: 2, window: '15m' }),
          blockDuration: '1h',
          idempotencyKey,
          idempotencyTtl: '2h',
          clock: () => now,
        },
      ],
      handler,
    });
    const withKey = { headers: { 'idempotency-key': 'pay-1' } };
    expect((await app.request('/pay', withKey)).status).toBe(200);
    expect((await app.request('/pay')).status).toBe(200);
    expect((await app.request('/pay')).status).toBe(429);
    now = T0 + 20 * MINUTE;
    const retries: [number, unknown][] = [];
    for (let i = 0; i < 3; i++) {
      const res = await app.request('/pay', withKey);
      retries.push([res.status, res.headers['retry-after']]);
    }
    expect(retries).toEqual(Array.from({ length: 3 }, () => [429, '2400']));
    expect(runs).toBe(2);
    now = T0 + 60 * MINUTE;
    expect((await app.request('/pay', withKey)).status).toBe(200);
    expect(runs).toBe(3);
  });
}
