/**
 * A Worker for the tests: exports RateLimitObject (binding RL), and answers
 * - `POST /charge?key=K&limit=N`: one charge of a fixed window of N per minute on key K through a
 *   `DurableObjectStore`, 200 when admitted, 429 when not;
 * - `/object/NAME`: the request forwarded to the object named NAME as it is (the Node tests' way to
 *   a real object: see `forwardingNamespace` in workerd.test.ts);
 * - anything else: 404.
 * Two such Workers bound to one class share its objects: the test's two instances.
 */
import { createLimiter, slidingWindowLog } from '@rl/core';
import { DurableObjectStore, type DurableObjectNamespaceLike } from '@rl/store-durable-object';

export { RateLimitObject } from '@rl/store-durable-object';

export default {
  async fetch(request: Request, env: { RL: DurableObjectNamespaceLike }): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/object/')) {
      const name = decodeURIComponent(url.pathname.slice('/object/'.length));
      const stub = env.RL.get(env.RL.idFromName(name) as never) as unknown as { fetch(r: Request): Promise<Response> };
      return stub.fetch(request);
    }
    if (url.pathname !== '/charge') return new Response('not found', { status: 404 });
    const store = new DurableObjectStore({ namespace: env.RL });
    const limiter = createLimiter({
      store,
      algorithm: slidingWindowLog({ limit: Number(url.searchParams.get('limit')), window: '1m' }),
      timeout: '5s',
      prefix: 'two-workers',
    });
    const decision = await limiter.consume(url.searchParams.get('key') ?? 'k');
    return new Response(decision.allowed ? 'ok' : 'limited', { status: decision.allowed ? 200 : 429 });
  },
};
