/**
 * A Worker for the subrequest count: @rl/hono with two limits on a `DurableObjectStore` whose binding
 * counts the subrequests of each request, told in `x-rl-subrequests`. `/sharded` spreads the keys over
 * 4 objects, the client in a hash tag so that a request's limits share one.
 */
import { Hono } from 'hono';
import { slidingWindowLog, tokenBucket } from '@rl/core';
import { rateLimit } from '@rl/hono';
import { DurableObjectStore, type DurableObjectNamespaceLike } from '@rl/store-durable-object';

export { RateLimitObject } from '@rl/store-durable-object';

type Env = { RL: DurableObjectNamespaceLike };

/** `namespace`, its stubs' fetches counted in `count.n`. */
function counted(namespace: DurableObjectNamespaceLike, count: { n: number }): DurableObjectNamespaceLike {
  return {
    idFromName: (name) => namespace.idFromName(name),
    get: (id) => {
      const stub = namespace.get(id);
      return {
        fetch: (input, init) => {
          count.n++;
          return stub.fetch(input, init);
        },
      };
    },
  };
}

const app = new Hono<{ Bindings: Env }>();
for (const [path, shards] of [
  ['/one', 1],
  ['/sharded', 4],
] as const) {
  app.get(path, async (c, next) => {
    const count = { n: 0 };
    const limit = rateLimit({
      store: new DurableObjectStore({ namespace: counted(c.env.RL, count), shards, name: path }),
      key: () => '{client-1}',
      prefix: `counted${path}`,
      timeout: '5s',
      limits: [
        { name: 'minute', algorithm: slidingWindowLog({ limit: 3, window: '1m' }) },
        { name: 'burst', algorithm: tokenBucket({ capacity: 10, refillRate: 1 }) },
      ],
    });
    const response = await limit(c, next);
    const res = response ?? c.res;
    res.headers.set('x-rl-subrequests', String(count.n));
    return res;
  });
  app.get(path, (c) => c.text('ok'));
}

export default app;
