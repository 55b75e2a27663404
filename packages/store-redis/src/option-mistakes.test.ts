import { describe, expect, it } from 'vitest';
import { createLimiter, tokenBucket } from '@rl/core';
import { Redis as IORedis } from 'ioredis';
import { Redis as IORedis5 } from 'ioredis5';
import { Redis as Valkey } from 'iovalkey';
import { createClient } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { GlideClient } from '@valkey/valkey-glide';
import { rejection } from '@rl/test-support';
import { RedisStore } from './redis-store.js';

// The mistakes of a first hour with the real clients, none connected (no Redis needed): each error
// says what was given and the fix, in one line, naming the function the user called.

const algorithm = tokenBucket({ capacity: 20, refillRate: 10 });
const ioredisClients = {
  'ioredis 6': () => new IORedis({ lazyConnect: true }),
  'ioredis 5': () => new IORedis5({ lazyConnect: true }),
  iovalkey: () => new Valkey({ lazyConnect: true }),
};
const nodeRedisClients = { 'node-redis 6': () => createClient(), 'node-redis 4': () => createClient4() };

describe('a Redis client where a store goes', () => {
  it.each(Object.entries(ioredisClients))('%s as store: "pass store: new RedisStore({ client })"', (_, make) => {
    const client = make();
    const error = rejection(() => createLimiter({ algorithm, store: client as never }));
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'createLimiter.store' });
    expect(error.message).toMatch(
      /^Invalid option createLimiter\.store: an ioredis \(or iovalkey\) client\. Expected a store: pass store: new RedisStore\(\{ client \}\) from @rl\/store-redis/,
    );
    client.disconnect();
  });

  it.each(Object.entries(nodeRedisClients))('%s as store: "pass store: new RedisStore({ client })"', (_, make) => {
    expect(rejection(() => createLimiter({ algorithm, store: make() as never })).message).toMatch(
      /^Invalid option createLimiter\.store: a node-redis client\. Expected a store: pass store: new RedisStore\(\{ client \}\)/,
    );
  });

  it("a rate-limiter-flexible limiter as store: an rl store, the limiter's algorithm in algorithm", () => {
    const client = new IORedis({ lazyConnect: true });
    const limiter = new RateLimiterRedis({ storeClient: client, points: 10, duration: 60 });
    expect(rejection(() => createLimiter({ algorithm, store: limiter as never })).message).toMatch(
      /^Invalid option createLimiter\.store: a rate-limiter-flexible limiter\. Expected an rl store/,
    );
    client.disconnect();
  });
});

describe('new RedisStore(client): the client goes in the options', () => {
  it.each(Object.entries({ ...ioredisClients, ...nodeRedisClients }))('%s', (name, make) => {
    const client = make();
    const error = rejection(() => new RedisStore(client as never));
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'RedisStore', fields: ['RedisStore'] });
    const kind = name.startsWith('node-redis') ? 'a node-redis client' : 'an ioredis \\(or iovalkey\\) client';
    expect(error.message).toMatch(
      new RegExp(
        `^Invalid option RedisStore: ${kind}\\. Expected an options object with the client in it: new RedisStore\\(\\{ client \\}\\)\\.`,
      ),
    );
    if ('disconnect' in client && typeof client.disconnect === 'function' && !name.startsWith('node-redis'))
      client.disconnect();
  });

  it('Valkey GLIDE', async () => {
    // lazyConnect: made without a server (port 1 is never one).
    const client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: 1 }], lazyConnect: true });
    try {
      expect(rejection(() => new RedisStore(client as never)).message).toMatch(
        /^Invalid option RedisStore: a Valkey GLIDE client\. Expected an options object with the client in it: new RedisStore\(\{ client \}\)\./,
      );
      expect(rejection(() => createLimiter({ algorithm, store: client as never })).message).toMatch(
        /^Invalid option createLimiter\.store: a Valkey GLIDE client\. Expected a store: pass store: new RedisStore\(\{ client \}\) from @rl\/store-redis/,
      );
    } finally {
      client.close();
    }
  });

  it("rate-limit-redis's sendCommand: pass the client itself", () => {
    const error = rejection(() => new RedisStore({ sendCommand: () => undefined } as never));
    expect(error.field).toBe('RedisStore.sendCommand');
    expect(error.message).toMatch(
      /^Invalid option RedisStore\.sendCommand: a function\. Expected no such option \(rate-limit-redis's sendCommand: pass the client itself, new RedisStore\(\{ client \}\)\); RedisStore takes client, prefix, buckets, batch, confirmTimeout\./,
    );
  });
});
