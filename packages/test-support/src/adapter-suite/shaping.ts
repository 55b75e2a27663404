import { expect, it, vi } from 'vitest';
import { leakyBucket } from '@rl/core';
import { deferred, members, startRequest } from '../http-client.js';
import type { SuiteContext } from './context.js';
import { heldFor } from './reservations.js';

/**
 * Waiting (a shaping leaky bucket): a request is held for its delay on the middleware's fake timers,
 * which the test moves on. The clock stands still, so the queue only grows.
 */
export function shapingTests(t: SuiteContext): void {
  it('holds a request for its delay, and rejects at once a delay beyond maxDelay', async () => {
    // One request per 50 ms.
    const app = await t.open({ middlewares: [{ algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }), wait: { maxDelay: '80ms' }, key: () => 'k' }] });
    const first = await app.request('/');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ remaining: 9 });

    expect((await heldFor(t, app, 50)).status).toBe(200);

    const rejected = await app.request('/'); // would be held 100 ms
    expect(rejected.status).toBe(429);
    expect(rejected.headers['retry-after']).toBe('1');
    expect(members(rejected.headers['ratelimit'])[0]!.params.t).toBe(1);
    // The rejected request's slot was given back: the next one still waits 100 ms, so it is rejected the same way.
    const again = await app.request('/');
    expect(again.status).toBe(429);
    expect(again.body.retryAfter).toBe(1);
  });

  it('never runs the handler of a client that leaves while held, and gives its slot back', async () => {
    const handler = vi.fn();
    const arrived = deferred();
    const closed = deferred();
    const app = await t.open({
      middlewares: [{ algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }), wait: { maxDelay: '1500ms' }, key: () => 'k' }],
      onArrival(request, res) {
        if (request.header('x-probe')) {
          arrived.resolve();
          res.on('close', () => closed.resolve());
        }
      },
      handler,
    });
    expect((await app.request('/')).status).toBe(200); // no delay
    expect(handler).toHaveBeenCalledTimes(1);
    const before = await app.peek?.('k');
    const undo = vi.spyOn(t.store, 'undo');

    const client = startRequest(app.url, '/', { 'x-probe': '1' });
    await arrived.promise;
    await t.timers.scheduled(300); // held
    client.destroy();
    await closed.promise;
    await t.timers.advanceAsync(400); // past the 300 ms the request would have been held
    expect(handler).toHaveBeenCalledTimes(1);
    // The held request's unit is given back to the store (and that has finished before the next request).
    await vi.waitFor(() => expect(undo).toHaveBeenCalled());
    await Promise.all(undo.mock.results.map((result) => result.value));
    if (before !== undefined) expect((await app.peek!('k')).remaining).toBe(before.remaining);

    // The slot was given back: the next request waits one interval again, not two.
    const next = app.request('/');
    await t.timers.scheduled(300);
    await t.timers.advanceAsync(300);
    const res = await next;
    expect(res.status).toBe(200);
    expect(members(res.headers['ratelimit'])[0]!.params.r).toBe(3);
    expect(handler).toHaveBeenCalledTimes(2);
  });
}
