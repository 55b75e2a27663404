import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { TestStore } from '../testing/test-store.js';
import { FakeTimers } from '../simulation/fake-timers.js';
import { directBinding } from './binding.js';
import type { HttpRateLimitOptions } from './option-types.js';
import { problemBody } from './problem.js';
import { HttpRateLimiter } from './rate-limiter.js';
import { Responder } from './responder.js';
import { nodeResponseEvents, type NodeResponseEvents } from './node-response.js';
import type { ResponseIO } from './response-io.js';
import type { RateLimitResult } from './result.js';

/** A response: its headers, status, body, and the Node parts (`destroyed`, `writableEnded`, `'finish'`, `'close'`, `'prefinish'`). */
class FakeResponse extends EventEmitter {
  destroyed = false;
  /** True once the handler ended the response (read at its 'close'). */
  writableEnded = false;
  status = 200;
  body: string | undefined;
  readonly headers = new Map<string, string>();
}

type Request = { key: string };
/** What the adapter was told to do, in order. */
type Call = [string, ...unknown[]];

function io(
  calls: Call[],
  ends: NodeResponseEvents<Request, FakeResponse>,
  onLimit = false,
  results: RateLimitResult[] = [],
): ResponseIO<Request, FakeResponse, string, string> {
  return {
    headers: {
      get: (res, name) => res.headers.get(name.toLowerCase()),
      set: (res, name, value) => void res.headers.set(name.toLowerCase(), value),
    },
    events: ends,
    statusCode: (_req, res) => res.status,
    requestWasSuccessful: undefined,
    lateError: (_req, _res, error) => void calls.push(['lateError', error]),
    record: (_req, _res, result) => {
      calls.push(['record', result.allowed]);
      results.push(result);
      return true;
    },
    proceed: (_req, _res, next, result) => {
      calls.push(['proceed', next, result?.allowed]);
      return 'proceeded';
    },
    setStatus: (_req, res, statusCode) => {
      res.status = statusCode;
    },
    sendProblem: (_req, res, body) => {
      res.body = body;
      return 'sent';
    },
    onLimit: onLimit
      ? (_req, _res, _next, result) => (calls.push(['onLimit', result.statusCode]), 'onLimit')
      : undefined,
    drop: (_req, _res, _next, givenBack) => {
      calls.push(['drop']);
      void givenBack;
      return 'dropped';
    },
  };
}

const binding = directBinding<Request>({
  owner: 'rateLimit',
  clientIp: () => '192.0.2.1',
  createStore: () => new TestStore(),
});

function setup(options: HttpRateLimitOptions<Request>, onLimit = false) {
  const timers = new FakeTimers();
  const limiter = new HttpRateLimiter<Request>(
    { clock: () => 0, key: (req) => req.key, timers, prefix: 'p', ...options },
    binding,
  );
  const calls: Call[] = [];
  const results: RateLimitResult[] = [];
  const ends = nodeResponseEvents<Request, FakeResponse>((res) => res);
  const responder = new Responder(limiter, io(calls, ends, onLimit, results));
  const respond = (res = new FakeResponse()) => {
    const req = { key: 'k' };
    const decided = limiter.decide(req);
    const out =
      decided instanceof Promise
        ? decided.then((r) => responder.respond(req, res, 'next', r))
        : responder.respond(req, res, 'next', decided);
    return { res, out };
  };
  return { limiter, timers, calls, results, responder, respond, ends };
}

describe('Responder', () => {
  it('proceeds with no result (skipped), and in the same call when admitted, after the headers', () => {
    const { responder, calls, respond } = setup({ algorithm: fixedWindow({ limit: 2, window: '1m' }) });
    expect(responder.respond({ key: 'k' }, new FakeResponse(), 'next', undefined)).toBe('proceeded');
    const { res, out } = respond();
    expect(out).toBe('proceeded');
    expect(res.headers.get('ratelimit')).toBe('"2-in-1m";r=1;t=60');
    expect(calls).toEqual([
      ['proceed', 'next', undefined],
      ['record', true],
      ['proceed', 'next', true],
    ]);
  });

  it('answers a denial with its status and the problem body, or hands it to onLimit', () => {
    const plain = setup({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
    plain.respond();
    const { res, out } = plain.respond();
    expect(out).toBe('sent');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(res.body).toBe(problemBody(plain.results.at(-1)!));
    expect(JSON.parse(res.body!)).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      status: 429,
      'violated-policies': ['1-in-1m'],
      retryAfter: 60,
    });
    const custom = setup({ algorithm: fixedWindow({ limit: 1, window: '1m' }) }, true);
    custom.respond();
    expect(custom.respond().out).toBe('onLimit');
    expect(custom.calls.at(-1)).toEqual(['onLimit', 429]);
  });

  it('drops a request whose client left while the limits ran, giving its units back', async () => {
    const { limiter, calls, respond } = setup({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
    const gone = new FakeResponse();
    gone.destroyed = true;
    expect(respond(gone).out).toBe('dropped');
    expect(calls.at(-1)).toEqual(['drop']);
    expect((await limiter.limiters[0]!.peek('k')).remaining).toBe(1);
  });

  it('holds a delayed request, then proceeds; a client that leaves during the hold is dropped and gives its slot back', async () => {
    const { limiter, timers, calls, respond } = setup({
      algorithm: leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' }),
      wait: { maxDelay: '5s' },
    });
    expect(respond().out).toBe('proceeded');
    const held = respond();
    expect(held.out).toBeInstanceOf(Promise);
    timers.advance(1_000);
    expect(await held.out).toBe('proceeded');
    const left = respond();
    left.res.emit('close');
    expect(await left.out).toBe('dropped');
    expect(calls.filter(([name]) => name === 'drop')).toHaveLength(1);
    expect((await limiter.limiters[0]!.peek('k')).delayMs).toBe(2_000);
  });

  it('releases a concurrency permit when the response has been sent, once', async () => {
    const { respond } = setup({ algorithm: concurrency({ limit: 1 }) });
    const first = respond();
    expect(await first.out).toBe('proceeded');
    expect(await respond().out).toBe('sent');
    first.res.emit('finish');
    first.res.emit('close');
    first.res.emit('close');
    await Promise.resolve();
    expect(await respond().out).toBe('proceeded');
    expect(await respond().out).toBe('sent');
  });

  describe('a client that leaves while the handler runs: the permit guards the work, not the connection', () => {
    const onePermit = () => setup({ algorithm: concurrency({ limit: 1 }) });

    it("keeps the permit until the handler ends the response on the closed connection ('prefinish'), then releases it once", async () => {
      const { respond } = onePermit();
      const left = respond();
      expect(await left.out).toBe('proceeded');
      left.res.emit('close');
      await Promise.resolve();
      expect(await respond().out).toBe('sent');
      left.res.writableEnded = true;
      left.res.emit('prefinish');
      // light-my-request's end() emits 'finish' even on a closed response: it is not a response sent in full.
      left.res.emit('finish');
      await Promise.resolve();
      expect(await respond().out).toBe('proceeded');
      expect(await respond().out).toBe('sent');
    });

    it('keeps the permit until the adapter says the work is done (workDone), before or after the client leaves', async () => {
      const { respond, ends } = onePermit();
      const left = respond();
      expect(await left.out).toBe('proceeded');
      left.res.emit('close');
      await Promise.resolve();
      expect(await respond().out).toBe('sent');
      ends.workDone(left.res);
      await Promise.resolve();
      const done = respond();
      expect(await done.out).toBe('proceeded');
      ends.workDone(done.res);
      expect(await respond().out).toBe('sent');
      done.res.emit('close');
      await Promise.resolve();
      expect(await respond().out).toBe('proceeded');
    });

    it('releases at once a response the handler had ended when the client left', async () => {
      const { respond } = onePermit();
      const ended = respond();
      expect(await ended.out).toBe('proceeded');
      ended.res.writableEnded = true;
      ended.res.emit('close');
      await Promise.resolve();
      expect(await respond().out).toBe('proceeded');
    });
  });

  describe('settling from the response (actualCost)', () => {
    const hourly = fixedWindow({ limit: 100, window: '1h' });
    const finish = (res: FakeResponse) => {
      res.writableEnded = true;
      res.emit('finish');
      res.emit('close');
    };
    const used = async (limiter: HttpRateLimiter<Request>) => 100 - (await limiter.limiters[0]!.peek('k')).remaining;

    it('settles a finished response at its actualCost; a response that never finished keeps its estimate', async () => {
      const actualCost = vi.fn((_req: Request, res: FakeResponse) => Number(res.headers.get('x-tokens')));
      const { limiter, respond } = setup({ algorithm: hourly, cost: 10, actualCost } as HttpRateLimitOptions<Request>);
      const done = respond();
      done.res.headers.set('x-tokens', '35');
      finish(done.res);
      const left = respond();
      left.res.emit('close');
      left.res.writableEnded = true;
      left.res.emit('prefinish');
      expect(await used(limiter)).toBe(35 + 10);
      expect(actualCost).toHaveBeenCalledTimes(1);
    });

    it('an actualCost that throws, rejects or returns a bad cost is a late error, and the estimate stands', async () => {
      for (const actualCost of [
        () => -1,
        () => 'many',
        () => {
          throw new Error('no header');
        },
        () => Promise.reject(new Error('later')),
        () => Promise.resolve(Number.NaN),
      ]) {
        const { limiter, respond, calls } = setup({
          algorithm: hourly,
          cost: 10,
          actualCost,
        } as HttpRateLimitOptions<Request>);
        finish(respond().res);
        await vi.waitFor(() => expect(calls.filter(([name]) => name === 'lateError')).toHaveLength(1));
        const [, error] = calls.find(([name]) => name === 'lateError')!;
        expect(error).toBeInstanceOf(Error);
        expect(await used(limiter)).toBe(10);
      }
    });

    it('an asynchronous actualCost settles once it answers; a handler that settled first wins', async () => {
      const { limiter, respond } = setup({
        algorithm: hourly,
        cost: 10,
        actualCost: () => Promise.resolve(3),
      } as HttpRateLimitOptions<Request>);
      finish(respond().res);
      await vi.waitFor(async () => expect(await used(limiter)).toBe(3));
      const early = setup({ algorithm: hourly, cost: 10, actualCost: () => 50 } as HttpRateLimitOptions<Request>);
      const { res } = early.respond();
      await early.results.at(-1)!.settle(7);
      finish(res);
      expect(await used(early.limiter)).toBe(7);
    });
  });
});
