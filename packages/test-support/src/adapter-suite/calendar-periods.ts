import { expect, it } from 'vitest';
import { calendarWindow, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import type { SuiteContext } from './context.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** An instant given in UTC. */
const utc = (iso: string): number => Date.parse(`${iso}Z`);

/** Quotas as API products sell them: a calendar period in a time zone beside a burst limit. */
export function calendarPeriodTests(t: SuiteContext): void {
  it("1000 per calendar month in Europe/Paris beside a burst bucket: w is the month's real length; at 23:59:30 local on its last day, Retry-After and t are 30", async () => {
    // 2027-02-28T22:59:30Z is 23:59:30 in Paris (UTC+1 in winter), the last day of a 28-day February.
    let now = utc('2027-02-28T22:59:30');
    const monthly = calendarWindow({ limit: 3, period: 'month', timeZone: 'Europe/Paris' });
    const app = await t.open({
      middlewares: [
        {
          limits: [{ algorithm: monthly }, { algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) }],
          clock: () => now,
        },
      ],
    });
    for (let i = 1; i <= 3; i++) {
      const res = await app.request('/');
      expect(res.status).toBe(200);
      expect(members(res.headers['ratelimit-policy'])[0]).toEqual({
        name: '3-per-month',
        params: { q: 3, w: (28 * DAY) / 1000 },
      });
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
    expect(members(march.headers['ratelimit-policy'])[0]).toEqual({
      name: '3-per-month',
      params: { q: 3, w: (31 * DAY - HOUR) / 1000 },
    });
    expect(members(march.headers['ratelimit'])[0]).toEqual({
      name: '3-per-month',
      params: { r: 2, t: (31 * DAY - HOUR) / 1000 },
    });
  });
}
