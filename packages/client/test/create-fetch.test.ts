import { InvalidOptionError } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { describe, expect, it } from 'vitest';
import { scriptedServer, settle, type ScriptedAnswer } from './scripted-server.js';
import { createFetch } from '../src/create-fetch.js';
import type { GiveUpEvent, PacedEvent, RetryEvent } from '../src/observer.js';
import type { CreateFetchOptions } from '../src/options.js';

const URL_ = 'https://api.example.com/items';
const limited = (retryAfter: string): ScriptedAnswer => ({ status: 429, fields: { 'retry-after': retryAfter } });

/** A client on fake timers in front of a scripted server, with the events it told. */
function setup(script: Parameters<typeof scriptedServer>[1], options: CreateFetchOptions = {}) {
  const timers = new FakeTimers(1_000);
  const server = scriptedServer(timers, script);
  const events = { retries: [] as RetryEvent[], paced: [] as PacedEvent[], givenUp: [] as GiveUpEvent[] };
  const client = createFetch({
    fetch: server.fetch,
    timers,
    random: () => 0.5,
    observer: {
      onRetry: (e) => events.retries.push(e),
      onPaced: (e) => events.paced.push(e),
      onGiveUp: (e) => events.givenUp.push(e),
    },
    ...options,
  });
  return { timers, seen: server.seen, events, client };
}

describe('createFetch: retries', () => {
  it("waits the server's Retry-After plus jitter (half of 1 s here), then returns the success", async () => {
    const { timers, seen, events, client } = setup([limited('2'), { status: 503, fields: { 'retry-after': '0' } }]);
    const { value } = await settle(timers, client(URL_));
    expect(value!.status).toBe(200);
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 2_500, 3_000]);
    expect(events.retries).toMatchObject([
      { attempt: 1, status: 429, waitMs: 2_500, serverWaitMs: 2_000 },
      { attempt: 2, status: 503, waitMs: 500, serverWaitMs: 0 },
    ]);
  });

  it('waits the RateLimit t of the empty partition when there is no Retry-After', async () => {
    const { timers, seen, client } = setup([{ status: 429, fields: { ratelimit: '"a";r=5;t=1, "b";r=0;t=7' } }]);
    await settle(timers, client(URL_));
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 7_500]);
  });

  it('Retry-After outranks a conflicting t: the retry goes at Retry-After, the pacing book holds the route no longer', async () => {
    const { timers, seen, client } = setup([
      { status: 429, fields: { 'retry-after': '1', ratelimit: '"p";r=0;t=20' } },
    ]);
    const { value } = await settle(timers, client(URL_));
    expect(value!.status).toBe(200);
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 1_500]);
  });

  it("gives the runtime's own init members (Node's dispatcher) to the fetch with each attempt, and no other", async () => {
    const dispatcher = { dispatch: () => true };
    const inits: (RequestInit | undefined)[] = [];
    const client = createFetch({
      fetch: async (request, init) => {
        inits.push(init);
        return new Response(request.method, {
          status: inits.length === 1 ? 503 : 200,
          headers: { 'retry-after': '0' },
        });
      },
      jitter: 0,
    });
    const response = await client(URL_, { method: 'GET', headers: { a: '1' }, dispatcher } as RequestInit);
    expect(response.status).toBe(200);
    expect(inits).toEqual([{ dispatcher }, { dispatcher }]);
    await createFetch({ fetch: async (_r, init) => (inits.push(init), new Response('')) })(URL_, { method: 'GET' });
    expect(inits[2]).toBeUndefined();
  });

  it('backs off with full jitter when the server names no time (a 502, a network error)', async () => {
    const { timers, seen, client } = setup([{ status: 502 }, 'network', { status: 504 }], { backoff: '200ms' });
    const { value } = await settle(timers, client(URL_));
    expect(value!.status).toBe(200);
    // random 0.5 under ceilings of 200, 400 and 800 ms
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 100, 300, 700]);
  });

  it('stops after `retries` retries and returns the last answer', async () => {
    const { timers, seen, events, client } = setup([limited('1'), limited('1'), limited('1')], { retries: 2 });
    const { value } = await settle(timers, client(URL_));
    expect(value!.status).toBe(429);
    expect(seen).toHaveLength(3);
    expect(events.givenUp).toMatchObject([{ attempts: 3, status: 429, reason: 'retries' }]);
  });

  it('returns at once an answer whose wait is past maxRetryAfter', async () => {
    const { timers, seen, events, client } = setup([limited('3600')], { maxRetryAfter: '1m' });
    const { value } = await settle(timers, client(URL_));
    expect(value!.status).toBe(429);
    expect(seen).toHaveLength(1);
    expect(events.givenUp).toMatchObject([{ reason: 'max-retry-after', elapsedMs: 0 }]);
  });

  it('does not begin a wait that would end past maxElapsed', async () => {
    const { timers, seen, events, client } = setup([limited('4'), limited('4')], { maxElapsed: '6s' });
    const { value } = await settle(timers, client(URL_));
    expect(value!.status).toBe(429);
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 4_500]);
    expect(events.givenUp).toMatchObject([{ reason: 'max-elapsed', attempts: 2 }]);
  });

  it('rejects with the network error when the retries are spent, and at once on an error that is no network error', async () => {
    const spent = setup(['network', 'network'], { retries: 1 });
    expect((await settle(spent.timers, spent.client(URL_))).error).toBeInstanceOf(TypeError);
    const failing = createFetch({ fetch: () => Promise.reject(new RangeError('not a network error')) });
    await expect(failing(URL_)).rejects.toThrow(RangeError);
  });

  it("ends the wait when the request's signal aborts, with the signal's reason", async () => {
    const { timers, seen, client } = setup([limited('10')]);
    const controller = new AbortController();
    const pending = settle(timers, client(URL_, { signal: controller.signal }));
    await timers.advanceAsync(1_000);
    controller.abort(new Error('the user left'));
    expect((await pending).error).toMatchObject({ message: 'the user left' });
    await timers.advanceAsync(20_000);
    expect(seen).toHaveLength(1);
    expect(timers.pending).toBe(0);
  });
});

describe('createFetch: unsafe methods', () => {
  it('does not retry a POST without an Idempotency-Key', async () => {
    const { timers, seen, events, client } = setup([limited('1')]);
    const { value } = await settle(timers, client(URL_, { method: 'POST', body: 'x' }));
    expect(value!.status).toBe(429);
    expect(seen).toHaveLength(1);
    expect(events.givenUp).toMatchObject([{ method: 'POST', reason: 'not-replayable' }]);
  });

  it("idempotencyKey: 'auto' gives each logical request one key, the same on each retry, its body sent again", async () => {
    const { timers, seen, client } = setup([limited('1'), 'network'], { idempotencyKey: 'auto' });
    await settle(timers, client(URL_, { method: 'POST', body: 'payload' }));
    await settle(timers, client(URL_, { method: 'POST', body: 'payload' }));
    const [first, second, third, fourth] = seen;
    expect(first!.idempotencyKey).toMatch(/^"[0-9a-f-]{36}"$/);
    expect([second!.idempotencyKey, third!.idempotencyKey]).toEqual([first!.idempotencyKey, first!.idempotencyKey]);
    expect(fourth!.idempotencyKey).not.toBe(first!.idempotencyKey);
    expect(seen.map((s) => s.body)).toEqual(['payload', 'payload', 'payload', 'payload']);
  });

  it('keeps the key a request carries, and retries it without the option', async () => {
    const { timers, seen, client } = setup([limited('1')]);
    await settle(timers, client(URL_, { method: 'PUT', headers: { 'Idempotency-Key': '"mine"' } }));
    expect(seen.map((s) => s.idempotencyKey)).toEqual(['"mine"', '"mine"']);
  });
});

describe('createFetch: pacing', () => {
  const empty = (t: number): ScriptedAnswer => ({ status: 200, fields: { ratelimit: `"p";r=0;t=${t}` } });

  it('holds the next requests of the origin until the reset, behind one timer; then one probes, the others wait for its answer', async () => {
    const { timers, seen, events, client } = setup([empty(5), { status: 200, fields: { ratelimit: '"p";r=10;t=60' } }]);
    await settle(timers, client(URL_));
    const calls = [client(URL_), client(`${URL_}?page=2`), client(URL_)];
    await timers.advanceAsync(0);
    expect(seen).toHaveLength(1);
    expect(timers.pending).toBe(1); // one timer for the three
    await timers.advanceAsync(5_000);
    const answers = await Promise.all(calls);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 5_000, 5_000, 5_000]);
    expect(events.paced.map((e) => e.waitMs)).toEqual([5_000, 5_000, 5_000]);
  });

  it('keeps origins apart, and lets everything through with pacing: false', async () => {
    const paced = setup([empty(30)]);
    await settle(paced.timers, paced.client(URL_));
    await settle(paced.timers, paced.client('https://other.example.com/'), 0);
    const unpaced = setup([empty(30)], { pacing: false });
    await settle(unpaced.timers, unpaced.client(URL_));
    await settle(unpaced.timers, unpaced.client(URL_), 0);
    expect([paced.seen.length, unpaced.seen.length]).toEqual([2, 2]);
  });

  it('lets a held request go when its signal aborts, and clears the timer no one waits on', async () => {
    const { timers, seen, client } = setup([empty(30)]);
    await settle(timers, client(URL_));
    const controller = new AbortController();
    const held = client(URL_, { signal: controller.signal });
    await timers.advanceAsync(1_000);
    expect(timers.pending).toBe(1);
    controller.abort(new Error('gone'));
    await expect(held).rejects.toThrow('gone');
    expect(timers.pending).toBe(0);
    expect(seen).toHaveLength(1);
  });

  it('holds a request at most maxRetryAfter, then sends it (the server answers for itself)', async () => {
    const { timers, seen, client } = setup([empty(600)], { maxRetryAfter: '10s' });
    await settle(timers, client(URL_));
    await settle(timers, client(URL_));
    expect(seen.map((s) => s.at - 1_000)).toEqual([0, 10_000]);
  });
});

describe('createFetch: options', () => {
  it.each([
    [{ retries: -1 }, 'retries', 'an integer from 0 to 100'],
    [{ retries: 1.5 }, 'retries', 'an integer from 0 to 100'],
    [{ maxElapsed: 'forever' }, 'maxElapsed', 'duration'],
    [{ jitter: -5 }, 'jitter', 'Expected a'],
    [{ idempotencyKey: true }, 'idempotencyKey', "'auto'"],
    [{ pacing: 'yes' }, 'pacing', 'true or false'],
    [{ timers: {} }, 'timers', 'FakeTimers'],
    [{ fetch: 'https://x' }, 'fetch', 'a fetch function'],
    [{ observer: { onRetry: 1 } }, 'observer.onRetry', 'a function'],
    [{ limit: 3 }, 'createFetch.limit', 'retries'],
  ])('%j is an InvalidOptionError naming %s and the fix', (options, field, fix) => {
    const make = () => createFetch(options as CreateFetchOptions);
    expect(make).toThrow(InvalidOptionError);
    expect(make).toThrow(expect.objectContaining({ field, code: 'RL_INVALID_OPTION' }));
    expect(make).toThrow(fix);
  });

  it('ignores an observer that throws', async () => {
    const timers = new FakeTimers();
    const server = scriptedServer(timers, [limited('0')]);
    const observer = {
      onRetry: () => {
        throw new Error('broken observer');
      },
    };
    const client = createFetch({ fetch: server.fetch, timers, observer });
    expect((await settle(timers, client(URL_))).value!.status).toBe(200);
  });

  it('ignores an async observer that rejects: no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const timers = new FakeTimers();
      const server = scriptedServer(timers, [limited('0')]);
      const observer = {
        onRetry: async () => {
          throw new Error('metrics backend down');
        },
      };
      const client = createFetch({ fetch: server.fetch, timers, observer });
      expect((await settle(timers, client(URL_))).value!.status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve)); // where an unhandled rejection is reported
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it.each([0, '0ms', '0s', ' 0 ms'])('jitter %j is none', (jitter) => {
    expect(() => createFetch({ jitter: jitter as CreateFetchOptions['jitter'] })).not.toThrow();
  });
});
