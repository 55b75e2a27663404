/**
 * The app of the runtime smoke suite, bundled for Bun, Deno and workerd: one Hono app and one plain
 * Fetch handler on the memory store, each route showing one behaviour (headers and the 429, a cost, a
 * held request, a client that leaves).
 */
import { Hono } from 'hono';
import { concurrency, fixedWindow, leakyBucket } from '@rl/core';
import { rateLimit, rateLimitOf, withRateLimit } from '@rl/hono';

const key = () => 'everyone';

/** Resolved when the client of `/hang` leaves (its signal aborts): the handler never answers before, and its permit (which guards the handler's work) comes back when it answers. */
function untilAborted(signal: AbortSignal): Promise<Response> {
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(new Response('gone')), { once: true }),
  );
}

export function createApp(): { fetch(request: Request, ...rest: unknown[]): Response | Promise<Response> } {
  const app = new Hono();
  app.get('/limited', rateLimit({ algorithm: fixedWindow({ limit: 2, window: '1m' }), key }), (c) =>
    c.json({ remaining: c.get('rateLimit')?.remaining }),
  );
  app.get(
    '/cost',
    rateLimit({ algorithm: fixedWindow({ limit: 10, window: '1m' }), key, cost: (c) => Number(c.req.query('n') ?? 1) }),
    (c) => c.json({ remaining: c.get('rateLimit')?.remaining }),
  );
  // One request every 300 ms: the second of two sent together is held about 300 ms.
  app.get(
    '/held',
    rateLimit({
      algorithm: leakyBucket({ capacity: 2, leakRate: 1000 / 300, mode: 'shape' }),
      key,
      wait: { maxDelay: '2s' },
    }),
    (c) => c.json({ delayMs: c.get('rateLimit')?.delayMs }),
  );
  const permits = rateLimit({ algorithm: concurrency({ limit: 1, lease: '1m' }), key });
  app.get('/hang', permits, (c) => untilAborted(c.req.raw.signal));
  app.get('/permit', permits, (c) => c.json({ admitted: true }));

  const plain = withRateLimit((request) => Response.json({ remaining: rateLimitOf(request)?.remaining }), {
    algorithm: fixedWindow({ limit: 1, window: '1m' }),
    key,
  });
  app.get('/plain', (c) => plain(c.req.raw));
  return app;
}
