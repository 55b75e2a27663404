import { expect, it } from 'vitest';
import { concurrency, fixedWindow, tokenBucket } from '@rl/core';
import { members, type TestResponse } from '../http-client.js';
import type { MountedApp } from './adapter.js';
import type { SuiteContext } from './context.js';
import { leavesWhileHeld } from './held-client.js';

/** Sends a request to `app` and checks that it is held for exactly `ms` on the suite's fake timers; its response. */
export async function heldFor(t: SuiteContext, app: MountedApp, ms: number): Promise<TestResponse> {
  let answered = false;
  const held = app.request('/').then((res) => ((answered = true), res));
  await t.timers.scheduled(ms);
  await t.timers.advanceAsync(ms - 1);
  expect(answered).toBe(false);
  await t.timers.advanceAsync(1);
  return held;
}

/**
 * Waiting for reservations (`wait` with any rate algorithm): every limit reserves, the request is held
 * on the middleware's fake timers for the latest of its slots, a denial by one limit cancels the
 * others' reservations, and a client that leaves cancels them all. The clock stands still, so what a
 * reservation took stays taken unless it is cancelled.
 */
export function reservationTests(t: SuiteContext): void {
  it('a token bucket with wait holds the request for its slot, and refuses at once a slot beyond maxDelay', async () => {
    // One token, then one per 100 ms.
    const app = await t.open({
      middlewares: [
        { algorithm: tokenBucket({ capacity: 1, refillRate: 10 }), wait: { maxDelay: '100ms' }, key: () => 'k' },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    expect((await heldFor(t, app, 100)).status).toBe(200);
    // The next slot is 200 ms away: denied at once, and it took nothing (the one after is denied alike).
    const denied = await app.request('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('1');
    expect((await app.request('/')).status).toBe(429);
  });

  it('with two limits, the request waits for the longer of the two reservations', async () => {
    const app = await t.open({
      middlewares: [
        {
          limits: [
            // Slots 0, 0, 50 ms, 100 ms; and 0, 100 ms.
            { name: 'fast', algorithm: tokenBucket({ capacity: 2, refillRate: 20 }) },
            { name: 'slow', algorithm: tokenBucket({ capacity: 1, refillRate: 10 }) },
          ],
          wait: { maxDelay: '100ms' },
          key: () => 'k',
        },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    expect((await heldFor(t, app, 100)).status).toBe(200);
  });

  it("a denial by one limit cancels the other's reservation: the next request sees its units back", async () => {
    const user = (req: unknown) => String(t.adapter.view(req).header('x-user'));
    const app = await t.open({
      middlewares: [
        {
          limits: [
            { name: 'bucket', algorithm: tokenBucket({ capacity: 5, refillRate: 10 }), key: () => 'shared' },
            { name: 'user', algorithm: fixedWindow({ limit: 1, window: '1m' }), key: user },
          ],
          wait: { maxDelay: '100ms' },
        },
      ],
    });
    const first = await app.request('/', { headers: { 'x-user': 'ann' } });
    expect(first.status).toBe(200);
    expect(members(first.headers['ratelimit'])[0]).toMatchObject({ name: 'bucket', params: { r: 4 } });
    // Ann's window is full for a minute: the bucket's reservation for her is cancelled.
    expect((await app.request('/', { headers: { 'x-user': 'ann' } })).status).toBe(429);
    const bob = await app.request('/', { headers: { 'x-user': 'bob' } });
    expect(bob.status).toBe(200);
    expect(members(bob.headers['ratelimit'])[0]).toMatchObject({ name: 'bucket', params: { r: 3 } });
  });

  it('a client that leaves while it waits never reaches the handler, and its reservation is cancelled', async () => {
    await leavesWhileHeld(
      t,
      { algorithm: tokenBucket({ capacity: 1, refillRate: 10 }), wait: { maxDelay: '100ms' }, key: () => 'k' },
      100,
    );
  });

  it('with a concurrency limit beside it, a client that leaves while it waits gets its reservation cancelled and its permit released', async () => {
    // A permit released before the hold notices the client left (as Fastify's onRequestAbort hook once
    // did) must not stand for the whole give-back. The next request then needs both the slot
    // (200 ms away, a 429, were it still taken) and the permit (a 429 at once were it still held).
    await leavesWhileHeld(
      t,
      {
        limits: [
          { name: 'rate', algorithm: tokenBucket({ capacity: 1, refillRate: 10 }) },
          { name: 'slots', algorithm: concurrency({ limit: 1 }) },
        ],
        wait: { maxDelay: '100ms' },
        key: () => 'k',
      },
      100,
    );
  });
}
