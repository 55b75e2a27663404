import { expect, it } from 'vitest';
import { leakyBucket } from '@rl/core';
import { members } from '../http-client.js';
import { leavesWhileHeld } from './held-client.js';
import type { SuiteContext } from './context.js';
import { heldFor } from './reservations.js';

/**
 * Waiting (a shaping leaky bucket): a request is held for its delay on the middleware's fake timers,
 * which the test moves on. The clock stands still, so the queue only grows.
 */
export function shapingTests(t: SuiteContext): void {
  it('holds a request for its delay, and rejects at once a delay beyond maxDelay', async () => {
    // One request per 50 ms.
    const app = await t.open({
      middlewares: [
        {
          algorithm: leakyBucket({ capacity: 10, leakRate: 20, mode: 'shape' }),
          wait: { maxDelay: '80ms' },
          key: () => 'k',
        },
      ],
    });
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
    const middleware = {
      algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '300ms', mode: 'shape' }),
      wait: { maxDelay: '1500ms' },
      key: () => 'k',
    };
    // The slot was given back: the next request waits one interval again, not two.
    const next = await leavesWhileHeld(t, middleware, 300);
    expect(members(next.headers['ratelimit'])[0]!.params.r).toBe(3);
  });
}
