/**
 * A closed store leaves nothing on its client (issue 37, item 2): a store made per request or per
 * test, which opened its subscriber connection (a denial cached) and sent a notice (a reset), then was
 * closed, adds no listener to the client, whatever the client (every family, standalone and Cluster;
 * on a Cluster its connections to the nodes are counted too), and closes its connection.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow } from '@rl/core';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';
import { ALL } from './support/clients.js';
import { cachedDenial } from './support/reset-heard.js';

const redis = useRedisDeployments('close-leaks');
const STORES = 20;

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

interface Emitter {
  eventNames(): (string | symbol)[];
  listenerCount(event: string | symbol): number;
}

/** Listeners on `client`, and on a Cluster on its connections to the nodes (ioredis `nodes()`, node-redis `masters[].client`). */
function listenerCount(client: RedisClient): number {
  const emitters: unknown[] = [client];
  const c = client as { nodes?: (role: string) => unknown[]; masters?: { client?: unknown }[] };
  if (typeof c.nodes === 'function') emitters.push(...c.nodes('all'));
  if (Array.isArray(c.masters)) emitters.push(...c.masters.map((master) => master.client));
  let count = 0;
  for (const emitter of emitters) {
    if (emitter === undefined || emitter instanceof Promise) continue;
    const e = emitter as Emitter;
    // A GLIDE client is no event emitter: the store can add no listener to it (its connections are counted).
    if (typeof e.eventNames !== 'function') continue;
    for (const name of e.eventNames()) count += e.listenerCount(name);
  }
  return count;
}

/** Connections to the standalone server (`CLIENT LIST`). */
async function connections(): Promise<number> {
  const list = (await redis.standalone.call('CLIENT', 'LIST')) as string;
  return list.trim().split('\n').length;
}

/**
 * {@link connections} once it is `expected` (the server drops a closed connection soon after: polled, at
 * most about `polls` × 10 ms; GLIDE's native core drops a closed client's connection 2 to 3 s after `close()`).
 */
async function connectionsSettle(expected: number, polls = 100): Promise<number> {
  let count = await connections();
  for (let i = 0; i < polls && count !== expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    count = await connections();
  }
  return count;
}

describe.each(ALL)('$name', (kind) => {
  it.each(['standalone', 'cluster'] as const)(
    `%s: ${STORES} stores opened, used (a denial cached, a reset sent) and closed leave no listener on the client`,
    async (deployment) => {
      const client = deployment === 'standalone' ? await kind.standalone(redis.url) : await kind.cluster(redis.nodes);
      opened.push(() => kind.close(client));
      const prefix = redis.freshPrefix();
      // A first store, used and closed: the client's own listeners of a first use (its node connections) are made.
      const warm = async (i: number): Promise<void> => {
        const store = new RedisStore({ client, prefix: `${prefix}${i}:`, confirmTimeout: 2_000 });
        const limiter = createLimiter({
          algorithm: fixedWindow({ limit: 1, window: '15m' }),
          store,
          prefix: 'p',
          clock: () => 1_800_000_000_000,
          timeout: false,
        });
        await limiter.consume('k');
        expect((await cachedDenial(limiter, 'k')).reason).toBe('deny-cache');
        await limiter.reset('k');
        await store.close();
      };
      // A GLIDE client is connected once created, and the first store's subscriber may still linger (see connectionsSettle).
      const glideConnections = kind.family === 'glide' && deployment === 'standalone' ? await connections() : 0;
      await warm(0);
      const before = listenerCount(client);
      const connectionsBefore =
        deployment !== 'standalone' ? 0 : kind.family === 'glide' ? glideConnections : await connections();
      for (let i = 1; i <= STORES; i++) await warm(i);
      expect(listenerCount(client)).toBe(before);
      if (deployment === 'standalone')
        expect(await connectionsSettle(connectionsBefore, kind.family === 'glide' ? 500 : 100)).toBe(connectionsBefore);
    },
  );
});

// A GLIDE client has no listeners to bound (it is no event emitter).
describe.each(ALL.filter((kind) => kind.family !== 'glide'))('$name: many stores on one client at once', (kind) => {
  it.each(['standalone', 'cluster'] as const)(
    '%s: 12 stores with their subscriptions open print no MaxListenersExceededWarning, and leave the bound as it was',
    async (deployment) => {
      const client = deployment === 'standalone' ? await kind.standalone(redis.url) : await kind.cluster(redis.nodes);
      opened.push(() => kind.close(client));
      const emitter = client as unknown as { getMaxListeners(): number };
      const bound = emitter.getMaxListeners();
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => void warnings.push(warning.name);
      process.on('warning', onWarning);
      try {
        const prefix = redis.freshPrefix();
        const stores = Array.from({ length: 12 }, (_, i) => new RedisStore({ client, prefix: `${prefix}${i}:` }));
        for (const store of stores) {
          const limiter = createLimiter({
            algorithm: fixedWindow({ limit: 1, window: '15m' }),
            store,
            prefix: 'p',
            timeout: false,
          });
          await limiter.consume('k');
          expect((await cachedDenial(limiter, 'k')).reason).toBe('deny-cache');
        }
        // A warning is emitted on a later tick.
        await new Promise((resolve) => setImmediate(resolve));
        for (const store of stores) await store.close();
      } finally {
        process.off('warning', onWarning);
      }
      expect(warnings).not.toContain('MaxListenersExceededWarning');
      expect(emitter.getMaxListeners()).toBe(bound);
    },
  );
});
