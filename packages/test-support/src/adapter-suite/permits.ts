import { expect, it, vi } from 'vitest';
import { concurrency, fixedWindow } from '@rl/core';
import { deferred, members, nextTurn } from '../http-client.js';
import { startLeaving, type AppSpec, type RequestView } from './adapter.js';
import type { SuiteContext } from './context.js';

/** A route handler that holds the requests to `path` until `finish()`: `started` once one is held, `finished` once it went on. */
function holdingRequestsTo(path: string) {
  const started = deferred();
  const gate = deferred();
  const finished = deferred();
  return {
    started: started.promise,
    finished: finished.promise,
    finish: () => gate.resolve(),
    async handler(request: RequestView): Promise<void> {
      if (request.path !== path) return;
      started.resolve();
      await gate.promise;
      finished.resolve();
    },
  };
}

/** Concurrency permits: taken when admitted, released exactly once whatever ends the request. */
export function permitTests(t: SuiteContext): void {
  const onePermit = (spec: Omit<AppSpec, 'middlewares'> = {}): AppSpec => ({
    ...spec,
    middlewares: [{ algorithm: concurrency({ limit: 1 }), key: () => 'k' }],
  });

  it('holds the permit until the response finishes, then releases it exactly once', async () => {
    const release = vi.spyOn(t.store, 'release');
    const slowRoute = holdingRequestsTo('/slow');
    const app = await t.open(onePermit({ handler: slowRoute.handler }));
    const slow = app.request('/slow');
    await slowRoute.started;
    const blocked = await app.request('/');
    expect(blocked.status).toBe(429);
    expect(members(blocked.headers['ratelimit-policy'])[0]!.name).toBe('1-concurrent');
    slowRoute.finish();
    expect((await slow).status).toBe(200);
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    expect((await app.request('/')).status).toBe(200);
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(2));
  });

  it('a concurrency denial says Retry-After: 1 (a permit frees when a request ends), not its 30 s lease', async () => {
    const slowRoute = holdingRequestsTo('/slow');
    const app = await t.open({
      handler: slowRoute.handler,
      middlewares: [{ algorithm: concurrency({ limit: 1, lease: '30s' }), key: () => 'k' }],
    });
    const slow = app.request('/slow');
    await slowRoute.started;
    const blocked = await app.request('/');
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBe('1');
    const [member] = members(blocked.headers.ratelimit);
    expect(member).toEqual({ name: '1-concurrent', params: { r: 0, t: 1 } });
    expect(JSON.parse(blocked.text)).toMatchObject({ status: 429, retryAfter: 1 });
    slowRoute.finish();
    expect((await slow).status).toBe(200);
  });

  it('gives the permit back at once when a rate limit after it denies', async () => {
    const release = vi.spyOn(t.store, 'release');
    const app = await t.open({
      middlewares: [
        {
          limits: [
            { name: 'in-flight', key: () => 'k', algorithm: concurrency({ limit: 1 }) },
            { name: 'rate', key: () => 'k', algorithm: fixedWindow({ limit: 1, window: '1m' }) },
          ],
        },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(release).toHaveBeenCalledTimes(2);
    expect(members(denied.headers['ratelimit']).map((m) => m.name)).toEqual(['in-flight', 'rate']);
    // The permit is free again (reported as remaining after the rollback): the in-flight limit admits, the rate limit still denies.
    const again = await app.request('/');
    expect(again.status).toBe(429);
    expect(members(again.headers['ratelimit'])[0]).toMatchObject({ name: 'in-flight', params: { r: 1 } });
    expect(release).toHaveBeenCalledTimes(3);
  });

  it('gives the permit back when the client leaves while the limits run', async () => {
    const release = vi.spyOn(t.store, 'release');
    const handler = vi.fn();
    const arrived = deferred();
    const gone = deferred();
    const app = await t.open({
      onArrival: (_request, res) => void res.on('close', () => gone.resolve()),
      handler,
      // The key resolves only once the client has gone: its 'close' is already past when the permit is taken.
      middlewares: [
        { algorithm: concurrency({ limit: 1 }), key: async () => (arrived.resolve(), await gone.promise, 'k') },
      ],
    });
    const client = startLeaving(app, '/');
    await arrived.promise;
    client.leave();
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    expect(handler).not.toHaveBeenCalled();
    // Nothing more happens later (a quiet period, not a timeout being waited for).
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(handler).not.toHaveBeenCalled();
    expect(release).toHaveBeenCalledTimes(1);
  });

  it('releases the permit when the handler throws', async () => {
    const release = vi.spyOn(t.store, 'release');
    const app = await t.open(
      onePermit({
        handler(request) {
          if (request.path === '/fail') throw new Error('boom');
        },
      }),
    );
    expect((await app.request('/')).status).toBe(200);
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(1));
    const failed = await app.request('/fail');
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({ error: 'boom' });
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(2));
    await expect.poll(async () => (await app.request('/ok')).status).toBe(200);
    await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(3));
  });

  // A permit guards the work (the seeds' "at most 50 requests at the database at once"), not the
  // connection: a client that leaves while its handler runs frees nothing until the handler ends.
  it.each(['answers', 'throws'] as const)(
    'a client that leaves frees nothing sooner: 8 clients that leave while their handler runs, at most 2 handlers at once, each permit back when its handler %s',
    async (ending) => {
      const release = vi.spyOn(t.store, 'release');
      const gate = deferred();
      const started = new Map<string, () => void>();
      const closed = new Map<string, () => void>();
      let running = 0;
      let most = 0;
      const app = await t.open({
        middlewares: [{ algorithm: concurrency({ limit: 2 }), key: () => 'k' }],
        onArrival(request, res) {
          const client = request.header('x-client');
          if (client !== undefined) res.on('close', () => closed.get(client)?.());
        },
        async handler(request) {
          const client = request.header('x-client');
          if (client === undefined) return;
          running++;
          most = Math.max(most, running);
          started.get(client)?.();
          await gate.promise;
          running--;
          if (ending === 'throws') throw new Error('failed after its client left');
        },
      });
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const client = String(i);
        const began = new Promise<void>((resolve) => started.set(client, resolve));
        const gone = new Promise<void>((resolve) => closed.set(client, resolve));
        const request = startLeaving(app, '/work', { 'x-client': client });
        // Admitted: its handler runs; denied: its 429 arrives. Then the client leaves.
        await Promise.race([began, request.answered.then((status) => void statuses.push(status))]);
        request.leave();
        await gone;
        // What the server does when a client leaves is done (a release it started has settled) before the next client comes.
        await nextTurn();
        await Promise.all(release.mock.results.map((call) => call.value));
      }
      expect(most).toBe(2);
      expect(statuses).toEqual([429, 429, 429, 429, 429, 429]);
      // Every client has left; the two handlers still run and keep their permits.
      expect(release).not.toHaveBeenCalled();
      expect((await app.request('/')).status).toBe(429);
      gate.resolve();
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(2));
      await Promise.all(release.mock.results.map((call) => call.value));
      expect(running).toBe(0);
      expect((await app.request('/')).status).toBe(200);
      await vi.waitFor(() => expect(release).toHaveBeenCalledTimes(3));
      // Each request released its own permit, once: three different leases.
      expect(new Set(release.mock.calls.map((call) => call[2])).size).toBe(3);
    },
  );
}
