import { expect, it, vi, type MockInstance } from 'vitest';
import { concurrency, fixedWindow, leakyBucket, tokenBucket, type Algorithm } from '@rl/core';
import { deferred, members } from '../http-client.js';
import { startLeaving, type MountedApp, type RequestView } from './adapter.js';
import { T0, type SuiteContext } from './context.js';

/** Waits until the store's `giveBack` has been called `times` times, and until those give-backs have settled. */
async function givenBack(undo: MockInstance, times: number): Promise<void> {
  await vi.waitFor(() => expect(undo).toHaveBeenCalledTimes(times));
  await Promise.all(undo.mock.results.map((result) => result.value as unknown));
}

/**
 * A request the handler holds: `handler` holds a request with `x-slow` until `release()`, then answers
 * it `held`; it answers any other `other`. `send(app)` sends one and resolves, once the handler holds
 * it, to its pending response.
 */
function slowRequest(held: unknown, other: unknown) {
  const started = deferred();
  const release = deferred();
  return {
    async handler(request: RequestView): Promise<unknown> {
      if (!request.header('x-slow')) return other;
      started.resolve();
      await release.promise;
      return held;
    },
    async send(app: MountedApp): Promise<{ response: ReturnType<MountedApp['request']> }> {
      const response = app.request('/', { headers: { 'x-slow': '1' } });
      await started.promise;
      return { response };
    },
    release: () => release.resolve(),
  };
}

/** The rate-limit result a handler saw, as the framework exposes it. */
interface SeenResult {
  allowed: boolean;
  dryRun: boolean;
  statusCode: number;
  remaining: number;
  retryAfterSeconds: number;
}

/** A limit chosen per request: plans and per-customer quotas. */
export function perRequestAlgorithmTests(t: SuiteContext): void {
  const plans = {
    free: tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' }),
    pro: tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }),
  };
  const planOf = (req: unknown): Algorithm => plans[t.adapter.view(req).header('x-plan') as keyof typeof plans];
  const as = (plan: string) => ({ headers: { 'x-plan': plan } });

  it('charges the plan of each request, and the headers show the chosen limit', async () => {
    const app = await t.open({ middlewares: [{ algorithm: planOf, key: () => 'ann' }] });
    const free = await app.request('/', as('free'));
    expect(free.status).toBe(200);
    expect(members(free.headers['ratelimit'])).toEqual([{ name: plans.free.policy.name, params: { r: 1, t: 3600 } }]);
    expect(members(free.headers['ratelimit-policy'])).toEqual([
      { name: plans.free.policy.name, params: { q: plans.free.policy.quota, w: plans.free.policy.windowSeconds } },
    ]);
    const pro = await app.request('/', { headers: { 'x-plan': 'pro' } });
    expect(members(pro.headers['ratelimit-policy'])[0]!.params.q).toBe(plans.pro.policy.quota);
  });

  it('keeps a key’s state when its plan changes, clamped to the new capacity (never a fresh full bucket)', async () => {
    const app = await t.open({ middlewares: [{ algorithm: planOf, key: () => 'ann' }] });
    for (let i = 0; i < 4; i++) expect((await app.request('/', as('pro'))).status).toBe(200);
    // 1 token left of 5; on the free plan (capacity 2) still 1, not a fresh 2.
    const downgraded = await app.request('/', as('free'));
    expect(downgraded.status).toBe(200);
    expect(members(downgraded.headers['ratelimit'])[0]!.params.r).toBe(0);
    expect((await app.request('/', as('free'))).status).toBe(429);
    expect((await app.request('/', as('pro'))).status).toBe(429);
  });

  it('takes an asynchronous choice (a quota read from a database), with its own name and beside a fixed limit', async () => {
    const quotas = new Map([
      ['acme', 3],
      ['globex', 1],
    ]);
    const quotaOf = async (req: unknown): Promise<Algorithm> => {
      await Promise.resolve();
      return fixedWindow({ limit: quotas.get(t.adapter.view(req).header('x-customer')!)!, window: '1h' });
    };
    const customer = (req: unknown) => t.adapter.view(req).header('x-customer')!;
    const app = await t.open({
      middlewares: [
        {
          limits: [
            { name: 'all', key: () => 'all', algorithm: fixedWindow({ limit: 100, window: '1h' }) },
            { name: 'quota', key: customer, algorithm: quotaOf },
          ],
        },
      ],
    });
    const acme = await app.request('/', { headers: { 'x-customer': 'acme' } });
    expect(members(acme.headers['ratelimit'])).toEqual([
      { name: 'all', params: { r: 99, t: 3600 } },
      { name: 'quota', params: { r: 2, t: 3600 } },
    ]);
    expect(members(acme.headers['ratelimit-policy'])[1]).toEqual({ name: 'quota', params: { q: 3, w: 3600 } });
    expect((await app.request('/', { headers: { 'x-customer': 'globex' } })).status).toBe(200);
    const denied = await app.request('/', { headers: { 'x-customer': 'globex' } });
    expect(denied.status).toBe(429);
    expect(members(denied.headers['ratelimit'])[0]).toEqual({ name: 'all', params: { r: 98, t: 3600 } });
  });

  it.each([
    ['returns something that is not an algorithm', () => ({ capacity: 5 }), 'RL_INVALID_ALGORITHM'],
    ['returns a concurrency algorithm', () => concurrency({ limit: 2 }), 'RL_INVALID_ALGORITHM'],
    [
      'returns a shaping leaky bucket without wait',
      () => leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }),
      'RL_INVALID_ALGORITHM',
    ],
    [
      'throws',
      () => {
        throw new Error('no plan');
      },
      undefined,
    ],
    ['rejects', () => Promise.reject(new Error('no plan')), undefined],
  ] as const)(
    'answers 500 through the error handler when the function %s, charging nothing',
    async (_label, bad, code) => {
      const app = await t.open({
        middlewares: [
          {
            limits: [
              { name: 'all', key: () => 'all', algorithm: fixedWindow({ limit: 10, window: '1h' }) },
              {
                name: 'plan',
                key: () => 'ann',
                algorithm: (req: unknown) => (t.adapter.view(req).header('x-bad') ? bad() : plans.free),
              },
            ],
          },
        ],
      });
      const res = await app.request('/', { headers: { 'x-bad': '1' } });
      expect(res.status).toBe(500);
      if (code !== undefined) expect(res.body).toMatchObject({ code });
      else expect(res.body).toMatchObject({ error: 'no plan' });
      const ok = await app.request('/');
      expect(members(ok.headers['ratelimit'])).toEqual([
        { name: 'all', params: { r: 9, t: 3600 } },
        { name: 'plan', params: { r: 1, t: 3600 } },
      ]);
    },
  );
}

/** Counting by the response's outcome: charged on arrival, given back when the response ends with an outcome that is not counted. */
export function outcomeTests(t: SuiteContext): void {
  const login = (request: RequestView) =>
    request.header('x-password') === 'right' ? { status: 200 } : { status: 401 };

  it('counts only failed attempts with skipSuccessfulRequests (a login limit)', async () => {
    const undo = vi.spyOn(t.store, 'giveBack');
    const app = await t.open({
      middlewares: [
        { algorithm: fixedWindow({ limit: 2, window: '15m' }), key: () => 'ann', skipSuccessfulRequests: true },
      ],
      handler: login,
    });
    for (let i = 1; i <= 3; i++) {
      expect((await app.request('/', { headers: { 'x-password': 'right' } })).status).toBe(200);
      await givenBack(undo, i);
    }
    expect((await app.request('/')).status).toBe(401);
    expect((await app.request('/')).status).toBe(401);
    expect((await app.request('/', { headers: { 'x-password': 'right' } })).status).toBe(429);
    expect(undo).toHaveBeenCalledTimes(3);
  });

  it('does not count failed responses with skipFailedRequests (4xx, and a handler that throws)', async () => {
    const undo = vi.spyOn(t.store, 'giveBack');
    const app = await t.open({
      middlewares: [{ algorithm: fixedWindow({ limit: 2, window: '1h' }), key: () => 'ann', skipFailedRequests: true }],
      handler: (request) => {
        if (request.header('x-throw')) throw new Error('broken');
        return request.header('x-status') ? { status: Number(request.header('x-status')) } : undefined;
      },
    });
    expect((await app.request('/', { headers: { 'x-status': '404' } })).status).toBe(404);
    await givenBack(undo, 1);
    expect((await app.request('/', { headers: { 'x-throw': '1' } })).status).toBe(500);
    await givenBack(undo, 2);
    expect((await app.request('/')).status).toBe(200);
    const last = await app.request('/', { headers: { 'x-status': '302' } });
    expect(last.status).toBe(302);
    expect((await app.request('/')).status).toBe(429);
    expect(undo).toHaveBeenCalledTimes(2);
  });

  it('asks requestWasSuccessful (sync or async) what a success is', async () => {
    const undo = vi.spyOn(t.store, 'giveBack');
    const app = await t.open({
      middlewares: [
        {
          algorithm: fixedWindow({ limit: 1, window: '1h' }),
          key: () => 'ann',
          skipFailedRequests: true,
          // The first argument is the framework's request (Express req, Fastify request, Koa ctx).
          requestWasSuccessful: async (req: unknown) => t.adapter.view(req).header('x-counted') === '1',
        },
      ],
    });
    expect((await app.request('/')).status).toBe(200); // not a success by this rule: given back
    await givenBack(undo, 1);
    expect((await app.request('/', { headers: { 'x-counted': '1' } })).status).toBe(200);
    expect((await app.request('/', { headers: { 'x-counted': '1' } })).status).toBe(429);
  });

  it.each([true, false])(
    'a response that never finishes (client gone) stays counted, with skipFailedRequests %s',
    async (skipFailedRequests) => {
      const undo = vi.spyOn(t.store, 'giveBack');
      const arrived = deferred();
      const closed = deferred();
      const never = deferred();
      const app = await t.open({
        middlewares: [
          {
            algorithm: fixedWindow({ limit: 1, window: '1h' }),
            key: () => 'ann',
            skipFailedRequests,
            skipSuccessfulRequests: !skipFailedRequests,
          },
        ],
        onArrival(request, res) {
          if (request.header('x-probe')) res.on('close', () => closed.resolve());
        },
        async handler(request) {
          if (!request.header('x-probe')) return;
          arrived.resolve();
          await never.promise;
        },
      });
      const client = startLeaving(app, '/', { 'x-probe': '1' });
      await arrived.promise;
      client.leave();
      await closed.promise;
      expect((await app.request('/')).status).toBe(429);
      expect(undo).not.toHaveBeenCalled();
      never.resolve();
    },
  );

  it("with skipFailedRequests, a client that aborts each request runs at most the limit's handlers (issue 25)", async () => {
    let running = 0;
    let ran = 0;
    const arrivals: (() => void)[] = [];
    const never = deferred();
    const app = await t.open({
      middlewares: [{ algorithm: fixedWindow({ limit: 3, window: '1h' }), key: () => 'ann', skipFailedRequests: true }],
      async handler() {
        ran++;
        running++;
        arrivals.shift()?.();
        await never.promise;
        running--;
      },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const arrived = new Promise<void>((resolve) => arrivals.push(resolve));
      const client = startLeaving(app, '/');
      const answered = client.answered.then((status) => void statuses.push(status));
      // Abort once the handler runs; a denied request is answered at once.
      await Promise.race([arrived, answered]);
      client.leave();
    }
    expect(ran).toBe(3);
    expect(running).toBe(3);
    expect(statuses.filter((status) => status === 429).length).toBe(27);
    never.resolve();
  });

  it('gives back only to the window it charged: a fixed window that rolled over keeps its new count', async () => {
    const undo = vi.spyOn(t.store, 'giveBack');
    let now = T0 + 900;
    const slow = slowRequest(undefined, { status: 401 });
    const app = await t.open({
      middlewares: [
        {
          algorithm: fixedWindow({ limit: 2, window: '1s' }),
          key: () => 'ann',
          skipSuccessfulRequests: true,
          clock: () => now,
        },
      ],
      handler: slow.handler,
    });
    const { response } = await slow.send(app); // charged in the window [T0, T0 + 1 s)
    now = T0 + 1500;
    expect((await app.request('/')).status).toBe(401);
    expect((await app.request('/')).status).toBe(401); // the new window is full
    slow.release();
    expect((await response).status).toBe(200);
    await givenBack(undo, 1);
    expect((await app.request('/')).status).toBe(429);
  });

  it('a give-back clears a cached denial of the key (the freed unit can be used at once)', async () => {
    const undo = vi.spyOn(t.store, 'giveBack');
    const slow = slowRequest({ status: 503 }, undefined);
    const app = await t.open({
      middlewares: [
        {
          algorithm: fixedWindow({ limit: 1, window: '1h' }),
          key: () => 'ann',
          skipFailedRequests: true,
          denyCache: true,
        },
      ],
      handler: slow.handler,
    });
    const { response } = await slow.send(app);
    expect((await app.request('/')).status).toBe(429); // denied by the store, and cached
    slow.release();
    expect((await response).status).toBe(503);
    await givenBack(undo, 1);
    expect((await app.request('/')).status).toBe(200);
  });
}

/** Dry-run: decided and charged, never enforced, invisible to the client. */
export function dryRunTests(t: SuiteContext): void {
  const seen: SeenResult[] = [];
  const record = (request: RequestView) => {
    seen.push({ ...(request.rateLimit as SeenResult) });
  };

  it('lets a denied request go on, tells the handler it was a dry-run denial, and sends no rate-limit header', async () => {
    seen.length = 0;
    const app = await t.open({
      middlewares: [{ algorithm: fixedWindow({ limit: 1, window: '1h' }), key: () => 'ann', dryRun: true }],
      handler: record,
    });
    for (let i = 0; i < 2; i++) {
      const res = await app.request('/');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit']).toBeUndefined();
      expect(res.headers['ratelimit-policy']).toBeUndefined();
      expect(res.headers['retry-after']).toBeUndefined();
    }
    expect(
      seen.map(({ allowed, dryRun, statusCode, remaining }) => ({ allowed, dryRun, statusCode, remaining })),
    ).toEqual([
      { allowed: true, dryRun: false, statusCode: 200, remaining: 0 },
      { allowed: false, dryRun: true, statusCode: 429, remaining: 0 },
    ]);
    expect(seen[1]!.retryAfterSeconds).toBe(3600);
  });

  it('a dry-run limit beside enforced ones: charged, never stops the others, never shown', async () => {
    seen.length = 0;
    const app = await t.open({
      middlewares: [
        {
          limits: [
            { name: 'new', key: () => 'ann', algorithm: fixedWindow({ limit: 1, window: '1h' }), dryRun: true },
            { name: 'enforced', key: () => 'ann', algorithm: fixedWindow({ limit: 3, window: '1h' }) },
          ],
        },
      ],
      handler: record,
    });
    for (const r of [2, 1, 0]) {
      const res = await app.request('/');
      expect(res.status).toBe(200);
      expect(members(res.headers['ratelimit'])).toEqual([{ name: 'enforced', params: { r, t: 3600 } }]);
      expect(members(res.headers['ratelimit-policy']).map((m) => m.name)).toEqual(['enforced']);
    }
    expect(seen.map((s) => [s.allowed, s.dryRun])).toEqual([
      [true, false],
      [false, true],
      [false, true],
    ]);
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('3600');
    expect(members(denied.headers['ratelimit'])).toEqual([{ name: 'enforced', params: { r: 0, t: 3600 } }]);
  });
}
