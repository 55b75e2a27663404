import { randomUUID } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import type { SuiteContext } from './context.js';
import { expectUncounted } from './uncounted.js';

/** Costs, several limits in one middleware and stacked middlewares, skip and onLimit. */
export function limitTests(t: SuiteContext): void {
  const user = (req: unknown) => String(t.adapter.view(req).header('x-user'));

  it('charges the cost of each request', async () => {
    const app = await t.open({
      middlewares: [{ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost: () => 5 }],
    });
    for (const remaining of [15, 10, 5, 0]) {
      const res = await app.request('/');
      expect(res.status).toBe(200);
      expect(members(res.headers['ratelimit'])[0]!.params.r).toBe(remaining);
    }
    expect((await app.request('/')).status).toBe(429);
  });

  it('charges the cost and appends the members of stacked middlewares', async () => {
    const app = await t.open({
      middlewares: [
        { algorithm: fixedWindow({ limit: 100, window: '1m' }) },
        { algorithm: fixedWindow({ limit: 20, window: '1s' }), cost: () => 5 },
      ],
    });
    const res = await app.request('/');
    expect(res.status).toBe(200);
    expect(members(res.headers['ratelimit'])).toEqual([
      { name: '100-in-1m', params: { r: 99, t: 60 } },
      { name: '20-in-1s', params: { r: 15, t: 1 } },
    ]);
    expect(members(res.headers['ratelimit-policy']).map((m) => m.name)).toEqual(['100-in-1m', '20-in-1s']);
  });

  it.each([1, 2])(
    'admits only when every limit admits, and a denial uses no quota in the others (user limit %i)',
    async (userLimit) => {
      const app = await t.open({
        middlewares: [
          {
            limits: [
              { name: 'global', key: () => 'all', algorithm: fixedWindow({ limit: 10, window: '1m' }) },
              { name: 'user', key: user, algorithm: fixedWindow({ limit: userLimit, window: '1m' }) },
            ],
          },
        ],
      });
      const ann = { headers: { 'x-user': 'ann' } };
      for (let i = 1; i <= userLimit; i++) {
        const res = await app.request('/', ann);
        expect(res.status).toBe(200);
        expect(members(res.headers['ratelimit'])).toEqual([
          { name: 'global', params: { r: 10 - i, t: 60 } },
          { name: 'user', params: { r: userLimit - i, t: 60 } },
        ]);
      }
      const denied = await app.request('/', ann);
      expect(denied.status).toBe(429);
      // The global unit taken before the user limit denied was given back.
      expect(members(denied.headers['ratelimit'])).toEqual([
        { name: 'global', params: { r: 10 - userLimit, t: 60 } },
        { name: 'user', params: { r: 0, t: 60 } },
      ]);
      const other = await app.request('/', { headers: { 'x-user': 'bob' } });
      expect(other.status).toBe(200);
      expect(members(other.headers['ratelimit'])[0]).toEqual({
        name: 'global',
        params: { r: 10 - userLimit - 1, t: 60 },
      });
      expect(other.body).toEqual({ remaining: userLimit - 1 });
    },
  );

  it('admits only when every limit admits, with keys from request headers on both limits', async () => {
    const app = await t.open({
      middlewares: [
        {
          limits: [
            {
              name: 'tenant',
              key: (req: unknown) => String(t.adapter.view(req).header('x-tenant')),
              algorithm: fixedWindow({ limit: 10, window: '1m' }),
            },
            { name: 'user', key: user, algorithm: fixedWindow({ limit: 1, window: '1m' }) },
          ],
        },
      ],
    });
    expect((await app.request('/', { headers: { 'x-tenant': 't', 'x-user': 'ann' } })).status).toBe(200);
    const denied = await app.request('/', { headers: { 'x-tenant': 't', 'x-user': 'ann' } });
    expect(denied.status).toBe(429);
    expect(members(denied.headers['ratelimit'])[0]).toEqual({ name: 'tenant', params: { r: 9, t: 60 } });
    const bob = await app.request('/', { headers: { 'x-tenant': 't', 'x-user': 'bob' } });
    expect(bob.status).toBe(200);
    expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'tenant', params: { r: 8, t: 60 } });
  });

  it.each([
    ['a constant cost', 5],
    ['a cost function', () => 5],
  ] as const)(
    'charges costs (%s), and gives back the units of the other limits when one denies',
    async (_label, cost) => {
      const app = await t.open({
        middlewares: [
          {
            limits: [
              { name: 'global', key: () => 'all', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), cost },
              { name: 'user', key: user, algorithm: fixedWindow({ limit: 1, window: '1m' }) },
            ],
          },
        ],
      });
      const first = await app.request('/', { headers: { 'x-user': 'ann' } });
      expect(first.status).toBe(200);
      expect(members(first.headers['ratelimit'])).toEqual([
        { name: 'global', params: { r: 15, t: 1 } },
        { name: 'user', params: { r: 0, t: 60 } },
      ]);
      expect((await app.request('/', { headers: { 'x-user': 'ann' } })).status).toBe(429);
      const bob = await app.request('/', { headers: { 'x-user': 'bob' } });
      expect(bob.status).toBe(200);
      expect(members(bob.headers['ratelimit'])[0]).toEqual({ name: 'global', params: { r: 10, t: 1 } });
    },
  );

  it('shares one limit between instances of an app (same prefix, one store)', async () => {
    const prefix = randomUUID();
    const options = { prefix, algorithm: fixedWindow({ limit: 2, window: '1m' }) };
    const [first, second] = [await t.open({ middlewares: [options] }), await t.open({ middlewares: [options] })];
    expect((await first.request('/')).status).toBe(200);
    expect((await second.request('/')).status).toBe(200);
    expect((await first.request('/')).status).toBe(429);
    expect((await second.request('/')).status).toBe(429);
  });

  it.each([
    ['a synchronous skip', false],
    ['an asynchronous skip', true],
  ] as const)('lets skipped requests through uncounted and without headers (%s)', async (_label, async) => {
    const skip = (req: unknown) => t.adapter.view(req).path === '/health';
    const app = await t.open({
      middlewares: [
        { algorithm: fixedWindow({ limit: 1, window: '1m' }), skip: async ? async (req: unknown) => skip(req) : skip },
      ],
    });
    await expectUncounted(app, '/health', 200);
  });

  it('calls onLimit with the status and headers already set', async () => {
    const body = vi.fn((result: { retryAfterSeconds: number }) => ({ slowDown: result.retryAfterSeconds }));
    const app = await t.open({
      middlewares: [{ algorithm: fixedWindow({ limit: 1, window: '1m' }), onLimit: t.adapter.onLimitSending(body) }],
    });
    expect((await app.request('/')).status).toBe(200);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.body).toEqual({ slowDown: 60 });
    expect(denied.headers['retry-after']).toBe('60');
    expect(body).toHaveBeenCalledTimes(1);
  });

  it('skips by the query, and lets onLimit answer a denial', async () => {
    const app = await t.open({
      middlewares: [
        {
          algorithm: fixedWindow({ limit: 1, window: '1m' }),
          skip: (req: unknown) => t.adapter.view(req).url.endsWith('?free=1'),
          onLimit: t.adapter.onLimitSending((result) => ({ slowDown: result.retryAfterSeconds })),
        },
      ],
    });
    expect((await app.request('/?free=1')).status).toBe(200);
    expect((await app.request('/')).status).toBe(200);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.body).toEqual({ slowDown: 60 });
  });
}
