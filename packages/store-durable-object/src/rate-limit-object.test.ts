import { describe, expect, it } from 'vitest';
import { createLimiter, slidingWindowLog } from '@rl/core';
import { DurableObjectStore, type DurableObjectNamespaceLike } from './durable-object-store.js';
import { PROTOCOL_ERROR_CODE, WIRE_CONTENT_TYPE, WIRE_URL } from './protocol.js';
import { OBJECT_MAX_KEYS, RateLimitObject } from './rate-limit-object.js';
import type { MemoryStore } from '@rl/store-memory';

/** A namespace of one object, in this process (the workerd tests run the real binding). */
function oneObject(object: RateLimitObject): DurableObjectNamespaceLike {
  return {
    idFromName: (name) => name,
    get: () => ({ fetch: (input, init) => object.fetch(new Request(input, init)) }),
  };
}

const wire = { 'content-type': WIRE_CONTENT_TYPE };

describe('RateLimitObject: a request that is not the store protocol', () => {
  it.each([
    ['a stray GET', { method: 'GET' }, 405],
    ['a POST of another content type', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }, 415],
    ['a body that is not JSON', { method: 'POST', headers: wire, body: '{"rl":1,"calls":' }, 400],
    ['JSON that is not rl', { method: 'POST', headers: wire, body: '{"hello":"world"}' }, 400],
    ['an rl message without calls', { method: 'POST', headers: wire, body: '{"rl":1}' }, 400],
    ['an empty body', { method: 'POST', headers: wire, body: '' }, 400],
    ['calls that are not calls', { method: 'POST', headers: wire, body: '{"rl":1,"calls":[1,2,"x"]}' }, 400],
    ['no calls', { method: 'POST', headers: wire, body: '{"rl":1,"calls":[]}' }, 400],
    ['no calls, another version', { method: 'POST', headers: wire, body: '{"rl":2,"calls":[]}' }, 400],
  ] as const)('%s: %i with the error code, every state untouched', async (_, init, status) => {
    const object = new RateLimitObject();
    const limiter = createLimiter({
      store: new DurableObjectStore({ namespace: oneObject(object) }),
      algorithm: slidingWindowLog({ limit: 2, window: '1m' }),
      prefix: 'p',
    });
    expect((await limiter.consume('k')).remaining).toBe(1);
    const res = await object.fetch(new Request(WIRE_URL, init as RequestInit));
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(PROTOCOL_ERROR_CODE);
    expect((await limiter.consume('k')).remaining).toBe(0);
  });

  it('a malformed call is answered with its own error, the others of the message as usual', async () => {
    const object = new RateLimitObject();
    const res = await object.fetch(
      new Request(WIRE_URL, {
        method: 'POST',
        headers: wire,
        body: JSON.stringify({
          rl: 1,
          calls: [
            [1, 'charge', { key: '' }, null],
            [2, 'nope'],
          ],
        }),
      }),
    );
    expect(res.status).toBe(200);
    const answers = JSON.parse(await res.text()) as { answers: [number, number, { code: string }][] };
    expect(answers.answers.map(([id, ok, error]) => [id, ok, error.code])).toEqual([
      [1, 0, 'RL_CLUSTER_WIRE'],
      [2, 0, 'RL_CLUSTER_WIRE'],
    ]);
  });
});

describe('DurableObjectStore: what other isolates cannot hear', () => {
  it('a control made in one isolate reaches no deny cache of another: the store says it cannot hear every reset, and a cache on it remembers nothing', async () => {
    const object = new RateLimitObject();
    // Two isolates: a store each, one object between them.
    const serving = new DurableObjectStore({ namespace: oneObject(object) });
    const operating = new DurableObjectStore({ namespace: oneObject(object) });
    const heard: [string | undefined, boolean | undefined][] = [];
    serving.watchResets((key, hearing) => void heard.push([key, hearing]));
    expect(heard).toEqual([[undefined, false]]);
    const options = { algorithm: slidingWindowLog({ limit: 1, window: '1m' }), prefix: 'p', denyCache: true };
    const limiter = createLimiter({ ...options, store: serving });
    const operator = createLimiter({ ...options, store: operating });
    expect((await limiter.consume('k')).allowed).toBe(true);
    // Denied by the object each time, never by a cache.
    for (let i = 0; i < 2; i++) {
      const denied = await limiter.consume('k');
      expect([denied.allowed, denied.reason]).toEqual([false, undefined]);
    }
    await operator.reset('k');
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('an object holds at most OBJECT_MAX_KEYS keys by default (an isolate has 128 MB)', () => {
    let made: MemoryStore | undefined;
    class Probe extends RateLimitObject {
      protected override createStore(): MemoryStore {
        return (made = super.createStore());
      }
    }
    new Probe();
    expect(made?.maxKeys).toBe(OBJECT_MAX_KEYS);
  });
});
