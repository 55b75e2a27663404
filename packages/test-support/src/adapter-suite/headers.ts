import { parseRateLimit } from 'ratelimit-header-parser';
import { expect, it } from 'vitest';
import { fixedWindow, slidingWindowLog, tokenBucket } from '@rl/core';
import { members, type TestResponse } from '../http-client.js';
import type { SuiteContext } from './context.js';

const parse = (res: TestResponse, format: string) =>
  parseRateLimit(res.headers as Record<string, string>, format === 'legacy' ? { reset: 'unix' } : { reset: 'seconds' });

/** The RateLimit headers in every format, Retry-After, and the 429 with its problem+json body. */
export function headerTests(t: SuiteContext): void {
  it.each([
    ['a fixed window', 3, fixedWindow({ limit: 3, window: '1m' })],
    ['a sliding log', 5, slidingWindowLog({ limit: 5, window: '1m' })],
  ] as const)(
    '%s: sends draft-8 headers, then 429 with Retry-After equal to t and a problem+json body',
    async (_label, limit, algorithm) => {
      const app = await t.open({ middlewares: [{ algorithm }] });
      const name = `${limit}-in-1m`;
      for (let i = 1; i <= limit; i++) {
        const res = await app.request('/');
        expect(res.status).toBe(200);
        expect(members(res.headers['ratelimit-policy'])).toEqual([{ name, params: { q: limit, w: 60 } }]);
        expect(members(res.headers['ratelimit'])).toEqual([{ name, params: { r: limit - i, t: 60 } }]);
        expect(res.body).toEqual({ remaining: limit - i });
        expect(res.headers['retry-after']).toBeUndefined();
      }
      const denied = await app.request('/');
      expect(denied.status).toBe(429);
      expect(members(denied.headers['ratelimit'])).toEqual([{ name, params: { r: 0, t: 60 } }]);
      expect(denied.headers['retry-after']).toBe('60');
      expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(denied.body).toMatchObject({
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        status: 429,
        'violated-policies': [name],
        retryAfter: 60,
      });
    },
  );

  it('rounds Retry-After up to whole seconds, at least 1', async () => {
    // 10 tokens per second: the next token is 100 ms away.
    const app = await t.open({ middlewares: [{ algorithm: tokenBucket({ capacity: 1, refillRate: 10 }) }] });
    expect((await app.request('/')).status).toBe(200);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('1');
    expect(members(denied.headers['ratelimit'])[0]!.params.t).toBe(1);
  });

  it.each(['draft-7', 'draft-6', 'legacy'] as const)('writes the %s format', async (format) => {
    const app = await t.open({
      middlewares: [{ algorithm: fixedWindow({ limit: 2, window: '1m' }), headers: format }],
    });
    const res = await app.request('/');
    expect(res.status).toBe(200);
    const parsed = parse(res, format);
    expect(parsed).toMatchObject({ limit: 2, used: 1, remaining: 1 });
    const resetIn = (parsed!.reset!.getTime() - Date.now()) / 1000;
    expect(resetIn).toBeGreaterThan(50);
    expect(resetIn).toBeLessThanOrEqual(61);
    expect(res.headers['ratelimit-policy']).toBe('2;w=60');
    if (format === 'draft-7') expect(res.headers['ratelimit']).toBe('limit=2, remaining=1, reset=60');
    if (format === 'draft-6') expect(res.headers['ratelimit-reset']).toBe('60');
    if (format === 'legacy') expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
  });

  it.each(['draft-7', 'draft-6', 'legacy'] as const)(
    'makes the %s reset of a denial equal to Retry-After',
    async (format) => {
      const app = await t.open({
        middlewares: [{ algorithm: tokenBucket({ capacity: 2, refillRate: 1, interval: '5s' }), headers: format }],
      });
      expect((await app.request('/')).status).toBe(200);
      expect((await app.request('/')).status).toBe(200);
      const denied = await app.request('/');
      expect(denied.status).toBe(429);
      expect(denied.headers['retry-after']).toBe('5');
      const parsed = parse(denied, format);
      expect(parsed).toMatchObject({ remaining: 0 });
      const resetIn = (parsed!.reset!.getTime() - Date.now()) / 1000;
      expect(resetIn).toBeGreaterThan(3);
      expect(resetIn).toBeLessThanOrEqual(6);
      if (format === 'draft-7') expect(denied.headers['ratelimit']).toMatch(/reset=5$/);
      if (format === 'draft-6') expect(denied.headers['ratelimit-reset']).toBe('5');
    },
  );

  it('sends only Retry-After with headers: false', async () => {
    const app = await t.open({ middlewares: [{ algorithm: fixedWindow({ limit: 1, window: '1m' }), headers: false }] });
    const ok = await app.request('/');
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit']).toBeUndefined();
    expect(ok.headers['ratelimit-policy']).toBeUndefined();
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('60');
    expect(denied.headers['ratelimit']).toBeUndefined();
  });
}
