import { expect, it, onTestFinished, vi } from 'vitest';
import { fixedWindow, leakyBucket, tokenBucket, type DecisionEvent, type HoldEvent, type Observer } from '@rl/core';
import { deferred } from '../http-client.js';
import { startLeaving } from './adapter.js';
import type { SuiteContext } from './context.js';

/** An observer that counts decisions by `limit/outcome` and keeps the hold events. */
function counting() {
  const counts: Record<string, number> = {};
  const holds: HoldEvent[] = [];
  const decisions: DecisionEvent[] = [];
  const observer: Observer = {
    decision(event) {
      const label = `${event.limit}/${event.outcome}`;
      counts[label] = (counts[label] ?? 0) + 1;
      decisions.push({ ...event });
    },
    hold: (event) => holds.push({ ...event }),
  };
  return { observer, counts, holds, decisions };
}

/** The `observer` option of a middleware: one event per decision of each limit, and the holds. */
export function observerTests(t: SuiteContext): void {
  it('a reservation cancelled because another limit denied is told once (reservationCancelled)', async () => {
    let cancelled = 0;
    const observer: Observer = { decision() {}, reservationCancelled: () => void cancelled++ };
    const app = await t.open({
      middlewares: [
        {
          observer,
          limits: [
            { name: 'bucket', algorithm: tokenBucket({ capacity: 5, refillRate: 10 }), key: () => 'shared' },
            { name: 'user', algorithm: fixedWindow({ limit: 1, window: '1m' }), key: () => 'ann' },
          ],
          wait: { maxDelay: '100ms' },
        },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    expect(cancelled).toBe(0);
    // Ann's window is full: the bucket's reservation is given back (in the store's own step on Redis).
    expect((await app.request('/')).status).toBe(429);
    expect(cancelled).toBe(1);
  });

  it('tells each limit’s decisions under its name, dry-run denials apart, without keys', async () => {
    const { observer, counts, decisions } = counting();
    const app = await t.open({
      middlewares: [
        {
          observer,
          limits: [
            { name: 'user', key: () => 'ann', algorithm: fixedWindow({ limit: 2, window: '1h' }) },
            { name: 'new', key: () => 'ann', algorithm: fixedWindow({ limit: 1, window: '1h' }), dryRun: true },
          ],
        },
      ],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.request('/')).status);
    expect(statuses).toEqual([200, 200, 429]);
    // The third request is denied by `user`, so `new` (after it) is not asked.
    expect(counts).toEqual({ 'user/allowed': 2, 'user/denied': 1, 'new/allowed': 1, 'new/dry_run_denied': 1 });
    expect(decisions.every((d) => d.key === undefined && d.cost === 1)).toBe(true);
    if (t.stores.remote) expect(decisions.every((d) => typeof d.storeMs === 'number' && d.storeMs >= 0)).toBe(true);
  });

  it('gives keys with observeKeys', async () => {
    const { observer, decisions } = counting();
    const app = await t.open({
      middlewares: [
        { observer, observeKeys: true, algorithm: fixedWindow({ limit: 2, window: '1h' }), key: () => 'ann' },
      ],
    });
    await app.request('/');
    expect(decisions.map((d) => d.key)).toEqual(['ann']);
  });

  it('tells a hold that starts and ends, and one whose client leaves', async () => {
    const { observer, counts, holds } = counting();
    const arrived = deferred();
    const closed = deferred();
    const app = await t.open({
      middlewares: [
        {
          observer,
          algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '100ms', mode: 'shape' }),
          wait: { maxDelay: '500ms' },
          key: () => 'k',
        },
      ],
      onArrival(request, res) {
        if (!request.header('x-probe')) return;
        arrived.resolve();
        res.on('close', () => closed.resolve());
      },
    });
    expect((await app.request('/')).status).toBe(200); // no delay
    const held = app.request('/');
    await t.timers.scheduled(100);
    await t.timers.advanceAsync(100);
    expect((await held).status).toBe(200);
    const client = startLeaving(app, '/', { 'x-probe': '1' });
    await arrived.promise;
    await t.timers.scheduled(200);
    client.leave();
    await closed.promise;
    await t.timers.advanceAsync(0);
    const name = holds[0]!.limit;
    expect(counts).toEqual({ [`${name}/allowed`]: 1, [`${name}/delayed`]: 2 });
    expect(holds.map((h) => [h.state, h.delayMs])).toEqual([
      ['started', 100],
      ['ended', 100],
      ['started', 200],
      ['abandoned', 200],
    ]);
  });

  it('goes on when the observer throws', async () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    onTestFinished(() => warning.mockRestore());
    const observer: Observer = {
      decision: () => {
        throw new Error('metrics down');
      },
    };
    const app = await t.open({
      middlewares: [{ observer, algorithm: fixedWindow({ limit: 1, window: '1h' }), key: () => 'k' }],
    });
    expect((await app.request('/')).status).toBe(200);
    expect((await app.request('/')).status).toBe(429);
  });

  it('goes on when an async observer rejects, in decisions and holds: reported, never an unhandled rejection', async () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    onTestFinished(() => warning.mockRestore());
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    onTestFinished(() => void process.off('unhandledRejection', onUnhandled));
    const observer: Observer = {
      decision: async () => {
        throw new Error('metrics down');
      },
      hold: async () => Promise.reject(new Error('holds down')),
    };
    const app = await t.open({
      middlewares: [
        {
          observer,
          algorithm: leakyBucket({ capacity: 2, leakRate: 10, mode: 'shape' }),
          wait: { maxDelay: '200ms' },
          key: () => 'k',
        },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    const held = app.request('/');
    await t.timers.scheduled(100);
    await t.timers.advanceAsync(100);
    expect((await held).status).toBe(200);
    expect((await app.request('/')).status).toBe(429);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    expect(warning).toHaveBeenCalledWith(
      expect.stringMatching(/metrics down/),
      expect.objectContaining({ code: 'RL_OBSERVER_ERROR' }),
    );
  });
}
