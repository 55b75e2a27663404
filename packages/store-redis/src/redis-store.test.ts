import { describe, expect, it } from 'vitest';
import { concurrency, slidingWindowLog, tokenBucket } from '@rl/core';
import { RedisStore } from './redis-store.js';

// What the store sends, without Redis: the scripts it defines and the arguments of each call.

/** A client that records the scripts defined on it and the arguments of each call (every reply: allowed, nothing else). */
function recordingClient() {
  const defined = new Map<string, { numberOfKeys: number; lua: string }>();
  const calls: string[][] = [];
  const reply = Buffer.alloc(48);
  reply.writeDoubleLE(1, 0);
  const client: Record<string, unknown> = {
    defineCommand(name: string, definition: { numberOfKeys: number; lua: string }) {
      defined.set(name, definition);
      client[`${name}Buffer`] = (...args: string[]) => {
        calls.push(args);
        return Promise.resolve(reply);
      };
    },
  };
  return { client, defined, calls };
}

describe('RedisStore calls', () => {
  it('the store declares each configuration before its script, numbers as exact literals', async () => {
    const { client, defined } = recordingClient();
    const store = new RedisStore({ client: client as never });
    await store.consume('k', tokenBucket({ capacity: 3, refillRate: 1, interval: '3s' }), 1, undefined);
    const [definition] = [...defined.values()];
    expect(definition!.numberOfKeys).toBe(1);
    expect(definition!.lua.split('\n').slice(0, 5)).toEqual([
      "local OP = 'c'",
      'local EXPLICIT_NOW_MARGIN_MS = 1000',
      'local CAPACITY, RATE = 3, 0.0003333333333333333',
      'local HORIZON, STATE_BYTES = 9000, 24',
      'local NOW_ARG = 3',
    ]);
  });

  it('a call sends its keys, then the lease id or else the cost (left out when 1 without now), then now', async () => {
    const { client, calls } = recordingClient();
    const store = new RedisStore({ client: client as never, prefix: 'p:', buckets: 1 });
    const bucket = tokenBucket({ capacity: 3, refillRate: 1 });
    const log = slidingWindowLog({ limit: 3, window: '1s' });
    const leases = concurrency({ limit: 3 });
    await store.consume('k', bucket, 1, undefined);
    await store.consume('k', bucket, 2, undefined);
    await store.peek('k', bucket, 1, 5);
    await store.undo('k', log, 1, undefined);
    // An undo's own arguments: the cost, then the time of the charge ('' for none), then now.
    await store.undo('k', log, 1, undefined, 1764590000123.456);
    await store.undo('k', bucket, 1, 9);
    await store.consume('k', log, 1.5, 7);
    await store.acquire('k', leases, 'lease.1', undefined);
    await store.consume('k', leases, 1, undefined);
    await store.release('k', leases, 'lease.1');
    expect(calls).toEqual([
      ['p:{#0}:tb', 'k'],
      ['p:{#0}:tb', 'k', '2'],
      ['p:{#0}:tb', 'k', '1', '5'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '1', '1764590000123.456'],
      ['p:{#0}:tb', 'k', '1', '', '9'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '1.5', '7'],
      ['p:{k}:cc', 'lease.1'],
      // A lease limit's consume reports its state: a peek for no lease.
      ['p:{k}:cc', ''],
      ['p:{k}:cc', 'lease.1'],
    ]);
  });
});

describe('RedisStore options', () => {
  it('null is a bad value, not "not given": prefix and buckets name their field', () => {
    const { client } = recordingClient();
    for (const field of ['prefix', 'buckets'] as const) {
      expect(() => new RedisStore({ client: client as never, [field]: null as never })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: `RedisStore.${field}` }),
      );
    }
    // undefined is the only "not given".
    const store = new RedisStore({ client: client as never, prefix: undefined, buckets: undefined });
    expect([store.prefix, store.buckets]).toEqual(['rl:', 16_384]);
  });

  it('an array is not an options object', () => {
    const { client } = recordingClient();
    expect(() => new RedisStore([] as never)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore' }));
    expect(() => new RedisStore(Object.assign([], { client }) as never)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore' }));
  });
});
