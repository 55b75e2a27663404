/**
 * A Worker for the tests: exports RateLimitObject (binding RL; without the sweep, below), and answers
 * - `POST /charge?key=K&limit=N`: one charge of a fixed window of N per minute on key K through a
 *   `DurableObjectStore`, 200 when admitted, 429 when not;
 * - `/object/NAME`: the request forwarded to the object named NAME as it is (the Node tests' way to
 *   a real object: see `forwardingNamespace` in workerd.test.ts);
 * - anything else: 404.
 * Two such Workers bound to one class share its objects: the test's two instances.
 */
import { createLimiter, slidingWindowLog } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import {
  DurableObjectStore,
  RateLimitObject as StoreObject,
  type DurableObjectNamespaceLike,
} from '@rl/store-durable-object';

/**
 * The object without the memory store's sweep: the conformance suite's limiters on one object have
 * clocks of their own (explicit times near 0 beside the wall clock), and a sweep, which projects the
 * latest time the store decided at, would drop the state of the ones behind it mid-test.
 */
export class RateLimitObject extends StoreObject {
  protected override createStore(): MemoryStore {
    return new MemoryStore({ sweepInterval: false });
  }
}

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
