import { expect, it, vi } from 'vitest';
import { fixedWindow, StoreError, type Store } from '@rl/core';
import { members } from '../http-client.js';
import type { SuiteContext } from './context.js';

/** Key and cost functions that fail: the app's error handling answers, and nothing is charged. */
export function failingFunctionTests(t: SuiteContext): void {
  const userOrThrow = (req: unknown): string => {
    const user = t.adapter.view(req).header('x-user');
    if (!user) throw new Error('no user');
    return user;
  };
  const algorithm = fixedWindow({ limit: 5, window: '1m' });

  it.each([
    ['one limit', '5-in-1m', { algorithm, key: userOrThrow }],
    [
      'two limits',
      'global',
      {
        limits: [
          { name: 'global', key: () => 'all', algorithm },
          { name: 'user', key: userOrThrow, algorithm },
        ],
      },
    ],
  ] as const)(
    'answers 500 through the error handler when the key function throws, charging nothing (%s)',
    async (_label, firstLimit, options) => {
      const app = await t.open({ middlewares: [options] });
      const res = await app.request('/');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'no user' });
      const ok = await app.request('/', { headers: { 'x-user': 'ann' } });
      expect(ok.status).toBe(200);
      expect(members(ok.headers['ratelimit'])[0]).toEqual({ name: firstLimit, params: { r: 4, t: 60 } });
    },
  );

  const badCosts: [string, () => number | Promise<number>, string | undefined, string | undefined][] = [
    ['throws', () => Promise.reject(new Error('cost failed')), 'cost failed', undefined],
    ['returns NaN', () => Number.NaN, undefined, 'RL_INVALID_COST'],
    ['exceeds the capacity', () => 50, undefined, 'RL_COST_EXCEEDS_CAPACITY'],
  ];
  it.each(badCosts)('answers 500 when the cost function %s, charging nothing', async (_label, cost, message, code) => {
    const app = await t.open({
      middlewares: [{ algorithm, cost: (req: unknown) => (t.adapter.view(req).header('x-bad') ? cost() : 1) }],
    });
    const res = await app.request('/', { headers: { 'x-bad': '1' } });
    expect(res.status).toBe(500);
    if (message) expect(res.body.error).toBe(message);
    if (code) expect(res.body.code).toBe(code);
    const ok = await app.request('/');
    expect(ok.status).toBe(200);
    expect(members(ok.headers['ratelimit'])[0]!.params.r).toBe(4);
  });
}

/**
 * Values a framework reads as "no error" or as a routing signal (Express's `next()`, `next('route')`,
 * `next('router')`; Fastify's `done(null)`): thrown by a user function, they must still end in the
 * error handler, never let the request through without a limit.
 */
export function falsyThrowTests(t: SuiteContext): void {
  const algorithm = fixedWindow({ limit: 1, window: '1m' });
  const thrownValues: [string, unknown][] = [
    ['undefined', undefined],
    ['null', null],
    ['false', false],
    ['0', 0],
    ["''", ''],
    ["'route'", 'route'],
    ["'router'", 'router'],
  ];
  const bad = (req: unknown): boolean => Boolean(t.adapter.view(req).header('x-bad'));

  it.each(thrownValues)(
    'a key, cost or skip function that throws %s answers 500, reaches no handler and charges nothing',
    async (_label, thrown) => {
      const handler = vi.fn();
      const throwing = [
        {
          key: (req: unknown) =>
            bad(req)
              ? (() => {
                  throw thrown;
                })()
              : 'k',
        },
        { key: () => 'k', cost: async (req: unknown) => (bad(req) ? Promise.reject(thrown) : 1) },
        {
          key: () => 'k',
          skip: (req: unknown) =>
            bad(req)
              ? (() => {
                  throw thrown;
                })()
              : false,
        },
      ];
      for (const options of throwing) {
        const app = await t.open({ middlewares: [{ algorithm, ...options }], handler });
        expect((await app.request('/', { headers: { 'x-bad': '1' } })).status).toBe(500);
        expect(handler).not.toHaveBeenCalled();
        // The one request of the window is still there.
        expect((await app.request('/')).status).toBe(200);
        expect(handler).toHaveBeenCalledTimes(1);
        handler.mockClear();
      }
    },
  );

  it.each(thrownValues)(
    'an onLimit that throws %s answers 500 and the denied request reaches no handler',
    async (_label, thrown) => {
      const handler = vi.fn();
      const app = await t.open({
        middlewares: [
          {
            algorithm,
            key: () => 'k',
            onLimit: () => {
              throw thrown;
            },
          },
        ],
        handler,
      });
      expect((await app.request('/')).status).toBe(200);
      expect((await app.request('/')).status).toBe(500);
      expect(handler).toHaveBeenCalledTimes(1);
    },
  );
}

/** A store that fails every call, as a local store does when it breaks. */
function brokenStore(): Store {
  const fail = (): never => {
    throw new StoreError('connection refused');
  };
  return {
    capabilities: { local: true, algorithms: ['fixed-window'] },
    charge: fail,
    peek: fail,
    giveBack: () => undefined,
    reset: () => undefined,
    acquire: fail,
    release: () => undefined,
  };
}

/** The failure policy seen over HTTP. */
export function storeFailureTests(t: SuiteContext): void {
  it('answers 503 with Retry-After when a fail-closed store fails, and admits with a fail-open one', async () => {
    const algorithm = fixedWindow({ limit: 5, window: '1m' });
    const closed = await t.open({ middlewares: [{ store: brokenStore(), algorithm }] });
    const res = await closed.request('/');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toMatchObject({ status: 503, retryAfter: 1 });
    const open = await t.open({ middlewares: [{ store: brokenStore(), algorithm, onStoreError: 'allow' }] });
    const admitted = await open.request('/');
    expect(admitted.status).toBe(200);
    expect(admitted.headers['ratelimit']).toBeUndefined();
  });
}

/** Store outages are logged once, not once per request, and the middleware's `on('storeError')` hears each failure. */
export function outageLogTests(t: SuiteContext): void {
  it('logs a failing store once per outage, whatever the number of requests', async () => {
    if (!t.adapter.logsToConsole) return; // Fastify logs on its own logger: its own test file checks it
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const app = await t.open({
        middlewares: [
          { store: brokenStore(), algorithm: fixedWindow({ limit: 5, window: '1m' }), logStoreErrors: undefined },
        ],
      });
      for (let i = 0; i < 5; i++) expect((await app.request('/')).status).toBe(503);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(
        /the store of limit "5-in-1m" failed \(store-error: connection refused\. See [^ ]*#rl_store_error\); requests are denied \(503\)/,
      );
    } finally {
      warn.mockRestore();
    }
  });

  it('logs nothing with logStoreErrors: false', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const app = await t.open({
        middlewares: [
          { store: brokenStore(), algorithm: fixedWindow({ limit: 5, window: '1m' }), logStoreErrors: false },
        ],
      });
      expect((await app.request('/')).status).toBe(503);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
}
