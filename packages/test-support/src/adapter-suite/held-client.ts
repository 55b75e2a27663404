import { expect, vi } from 'vitest';
import { deferred, type TestResponse } from '../http-client.js';
import { startLeaving } from './adapter.js';
import type { SuiteContext } from './context.js';

/**
 * Under `middleware` (whose key is `k`, where a first request passes at once and a second is held
 * `slotMs` for the next slot): a second request's client leaves while it is held. It never reaches the
 * handler, and what it took is given back (the store's `giveBack`, finished before the next request; the
 * first limit's `remaining` as before it, where the adapter can peek): the next request gets that
 * slot, held `slotMs` again, not twice as long, and its response is returned.
 */
export async function leavesWhileHeld(
  t: SuiteContext,
  middleware: Record<string, unknown>,
  slotMs: number,
): Promise<TestResponse> {
  const handler = vi.fn();
  const arrived = deferred();
  const closed = deferred();
  const app = await t.open({
    middlewares: [middleware],
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
  const undo = vi.spyOn(t.store, 'giveBack');
  const client = startLeaving(app, '/', { 'x-probe': '1' });
  await arrived.promise;
  await t.timers.scheduled(slotMs); // held
  client.leave();
  await closed.promise;
  await t.timers.advanceAsync(2 * slotMs); // past the time the request would have been held
  expect(handler).toHaveBeenCalledTimes(1);
  await vi.waitFor(() => expect(undo).toHaveBeenCalled());
  await Promise.all(undo.mock.results.map((result) => result.value));
  if (before !== undefined) expect((await app.peek!('k')).remaining).toBe(before.remaining);
  const next = app.request('/');
  await t.timers.scheduled(slotMs);
  await t.timers.advanceAsync(slotMs);
  const response = await next;
  expect(response.status).toBe(200);
  expect(handler).toHaveBeenCalledTimes(2);
  return response;
}
