import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import type { NumericAlgorithm } from '../algorithm.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import type { Decision } from '../decision.js';
import { InvalidOptionError, StoreError } from '../errors.js';
import type { Charge, Charged, GiveBack, Store } from '../store/interface.js';
import type { FrameworkBinding } from './binding.js';
import type { HttpRateLimitOptions } from './option-types.js';
import { problemBody } from './problem.js';
import type { RateLimitResult } from './result.js';
import { PrefixRegistry } from './prefixes.js';
import { HttpRateLimiter } from './rate-limiter.js';
import { adaptiveConcurrency } from '../adaptive/adaptive-concurrency.js';
import { FakeTimers } from '../simulation/fake-timers.js';

interface FakeRequest {
  ip?: string;
  headers: IncomingHttpHeaders;
}

/** A store for numeric algorithms over a Map, enough to drive the engine (the real stores have their own suites). */
class MapStore implements Store {
  readonly capabilities = {
    local: true,
    algorithms: ['fixed-window', 'token-bucket'] as const,
  } as unknown as Store['capabilities'];
  readonly states = new Map<string, number[]>();
  closed = false;
  charge(charge: Charge, now = 0): Charged {
    const { key, cost } = charge;
    const algorithm = charge.algorithm as NumericAlgorithm;
    const state = this.states.get(key);
    const s = state ?? new Array<number>(algorithm.stateSize).fill(0);
    const decision = algorithm.step(s, 0, state === undefined, { now, cost, commit: true });
    this.states.set(key, s);
    return { decision, took: 'charged' };
  }
  peek(key: string, algorithm: NumericAlgorithm, cost: number, now = 0): Decision {
    const state = this.states.get(key);
    return algorithm.step(state ?? new Array<number>(algorithm.stateSize).fill(0), 0, state === undefined, {
      now,
      cost,
      commit: false,
    });
  }
  giveBack(back: GiveBack, now = 0): void {
    const state = this.states.get(back.key);
    if (state) (back.algorithm as NumericAlgorithm).undo(state, 0, { now, cost: back.cost });
  }
  reset(key: string): void {
    this.states.delete(key);
  }
  acquire(): never {
    throw new StoreError('not supported here');
  }
  release(): void {}
  close(): void {
    this.closed = true;
  }
}

const T0 = 1_800_000_000_000;
const clock = (): number => T0;

function binding(createStore: () => Store = () => new MapStore()): FrameworkBinding<FakeRequest> {
  return {
    owner: 'rateLimit',
    adapterOptions: [],
    clientIp: (req) => req.ip,
    requestHeaders: (req) => req.headers,
    trustsProxy: () => false,
    trustProxyAdvice: 'Trust the proxy',
    trustsAllProxies: () => false,
    trustAllProxiesAdvice: 'Trust only your proxies',
    createStore,
  };
}

function limiter(options: HttpRateLimitOptions<FakeRequest>, b = binding()): HttpRateLimiter<FakeRequest> {
  return new HttpRateLimiter<FakeRequest>({ clock, ...options }, b);
}

describe('HttpRateLimiter', () => {
  it('derives a deterministic default namespace per middleware, and keeps an explicit prefix', () => {
    const algorithm = fixedWindow({ limit: 7, window: '1m' });
    const first = limiter({ algorithm });
    const second = limiter({ algorithm });
    expect(first.prefix).toMatch(/^rl:7-in-1m(#\d+)?$/);
    expect(second.prefix).not.toBe(first.prefix);
    expect(second.prefix).toMatch(/^rl:7-in-1m#\d+$/);
    expect(limiter({ algorithm, prefix: 'api' }).prefix).toBe('api');
    // A middleware rejected at creation takes no number: the next one is #3, as if it had never been tried.
    expect(() => limiter({ algorithm, onStoreError: 'ignore' as never })).toThrowError(/onStoreError/);
    expect(limiter({ algorithm }).prefix).toBe(
      second.prefix.replace(/#(\d+)$/, (_m, n: string) => `#${Number(n) + 1}`),
    );
    // Nor does one that its adapter rejects (an adapter option of its own), and it creates no store.
    const created: MapStore[] = [];
    const strict = {
      ...binding(() => (created.push(new MapStore()), created.at(-1)!)),
      adapterOptions: ['onLimit'],
      checkAdapterOptions: (o: Readonly<Record<string, unknown>>) => {
        if (typeof o.onLimit !== 'function') throw new InvalidOptionError('rateLimit.onLimit', o.onLimit, 'a function');
      },
    };
    expect(() => new HttpRateLimiter<FakeRequest>({ clock, algorithm, onLimit: 'nope' } as never, strict)).toThrowError(
      /onLimit/,
    );
    expect(created).toEqual([]);
    const next = limiter({ algorithm });
    expect(next.prefix).toBe(second.prefix.replace(/#(\d+)$/, (_m, n: string) => `#${Number(n) + 2}`));
    const several = limiter({
      prefix: 'api',
      limits: [
        { name: 'a', algorithm },
        { name: 'b', algorithm },
      ],
    });
    expect(several.limiters.map((l) => l.prefix)).toEqual(['api:a', 'api:b']);
  });

  it('keys on the client IP with IPv6 grouped, and charges each request its cost', async () => {
    const store = new MapStore();
    const engine = limiter({ store, algorithm: tokenBucket({ capacity: 10, refillRate: 1 }), cost: 3 });
    const v4 = await engine.evaluate({ ip: '::ffff:192.0.2.1', headers: {} });
    expect(v4).toMatchObject({ allowed: true, key: '192.0.2.1', remaining: 7 });
    const v6 = await engine.evaluate({ ip: '2001:db8:0:1ff::5', headers: {} });
    expect(v6!.key).toBe('2001:db8:0:100::/56');
    expect([...store.states.keys()]).toEqual([`${engine.prefix}:192.0.2.1`, `${engine.prefix}:2001:db8:0:100::/56`]);
  });

  it('rejects a request without a client address as a bad key, charging nothing', async () => {
    const engine = limiter({ algorithm: fixedWindow({ limit: 1, window: '1m' }) });
    await expect(engine.evaluate({ headers: {} })).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
  });

  it('binds to the limit with the fewest remaining, and to the denying one on a denial', async () => {
    const engine = limiter({
      limits: [
        { name: 'wide', key: () => 'all', algorithm: fixedWindow({ limit: 10, window: '1m' }) },
        { name: 'narrow', algorithm: fixedWindow({ limit: 2, window: '1m' }) },
      ],
    });
    const req = { ip: '192.0.2.1', headers: {} };
    expect(await engine.evaluate(req)).toMatchObject({ allowed: true, binding: 1, remaining: 1, statusCode: 200 });
    await engine.evaluate(req);
    const denied = await engine.evaluate(req);
    expect(denied).toMatchObject({
      allowed: false,
      deniedBy: 1,
      binding: 1,
      statusCode: 429,
      retryAfterSeconds: 60,
      rolledBack: true,
    });
    expect(problemBody(denied!)).toBe(
      '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"Rate limit exceeded. Retry after 60 seconds.","violated-policies":["narrow"],"retryAfter":60}',
    );
    // The wide limit's unit was given back: 2 admitted requests used 2 of its 10.
    expect((await engine.limiters[0]!.peek('all')).remaining).toBe(8);
  });

  it('answers 503 when a fail-closed store fails, and skips requests asynchronously', async () => {
    const broken = new MapStore();
    broken.charge = () => {
      throw new StoreError('down');
    };
    const engine = limiter({
      store: broken,
      algorithm: fixedWindow({ limit: 5, window: '1m' }),
      skip: async (req) => req.ip === '10.0.0.1',
    });
    expect(await engine.evaluate({ ip: '10.0.0.1', headers: {} })).toBeUndefined();
    const result = await engine.evaluate({ ip: '10.0.0.2', headers: {} });
    expect(result).toMatchObject({ allowed: false, statusCode: 503, reason: 'store-error', retryAfterSeconds: 1 });
    expect(problemBody(result!)).toContain('"status":503');
  });

  it('serialises a result as its data only', async () => {
    const engine = limiter({ algorithm: fixedWindow({ limit: 3, window: '1m' }), key: () => 'k' });
    const json = JSON.parse(JSON.stringify(await engine.evaluate({ headers: {} })));
    expect(json).toMatchObject({
      allowed: true,
      statusCode: 200,
      limit: 3,
      remaining: 2,
      key: 'k',
      keys: ['k'],
      costs: [1],
      deniedBy: -1,
    });
    expect(Object.keys(json).sort()).toEqual(
      [
        'allowed',
        'binding',
        'costs',
        'decisions',
        'delayMs',
        'deniedBy',
        'dryRun',
        'key',
        'keys',
        'limit',
        'policy',
        'remaining',
        'resetMs',
        'retryAfterMs',
        'retryAfterSeconds',
        'rolledBack',
        'statusCode',
        'replayed',
        'idempotencyConflict',
        'overloaded',
      ].sort(),
    );
  });

  it('gives everything back when a held request is abandoned, once', async () => {
    const engine = limiter({ algorithm: fixedWindow({ limit: 3, window: '1m' }), key: () => 'k' });
    const result = await engine.evaluate({ headers: {} });
    expect(result!.remaining).toBe(2);
    await result!.abandon();
    await result!.abandon();
    expect((await engine.limiters[0]!.peek('k')).remaining).toBe(3);
  });

  it('warns once when a forwarding header arrives and the framework does not trust proxies', async () => {
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const engine = limiter({ algorithm: fixedWindow({ limit: 9, window: '1m' }) });
      for (let i = 0; i < 3; i++)
        await engine.evaluate({ ip: '10.0.0.1', headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(emit).toHaveBeenCalledTimes(1);
      expect(emit.mock.calls[0]![1]).toEqual({ code: 'RL_TRUST_PROXY' });
    } finally {
      emit.mockRestore();
    }
  });

  it('resets a key in every limit, and closes only the store it created', async () => {
    const created = new MapStore();
    const engine = limiter(
      { algorithm: fixedWindow({ limit: 1, window: '1m' }), key: () => 'k' },
      binding(() => created),
    );
    await engine.evaluate({ headers: {} });
    expect((await engine.evaluate({ headers: {} }))!.allowed).toBe(false);
    await engine.controls.resetKey('k');
    expect((await engine.evaluate({ headers: {} }))!.allowed).toBe(true);
    await engine.close();
    expect(created.closed).toBe(true);
    const given = new MapStore();
    await limiter({ store: given, algorithm: fixedWindow({ limit: 1, window: '1m' }) }).close();
    expect(given.closed).toBe(false);
  });

  it('takes default prefixes from the registry it is given, not from process state', () => {
    const algorithm = fixedWindow({ limit: 7, window: '1m' });
    const registry = new PrefixRegistry();
    const make = () => new HttpRateLimiter<FakeRequest>({ clock, algorithm }, binding(), registry);
    expect([make().prefix, make().prefix]).toEqual(['rl:7-in-1m', 'rl:7-in-1m#2']);
    expect(new HttpRateLimiter<FakeRequest>({ clock, algorithm }, binding(), new PrefixRegistry()).prefix).toBe(
      'rl:7-in-1m',
    );
  });

  it('passes the limiter options through to every limit', () => {
    const algorithm = fixedWindow({ limit: 7, window: '1m' });
    expect(() => limiter({ algorithm, storeFailureThreshold: 0 })).toThrowError(/storeFailureThreshold/);
    expect(() => limiter({ algorithm, storeRetryInterval: 'soon' as never })).toThrowError(/storeRetryInterval/);
    expect(() => limiter({ algorithm, denyCache: 'yes' as never })).toThrowError(/denyCache/);
    expect(() =>
      limiter({ algorithm, denyCache: { maxKeys: 5 }, storeRetryInterval: '2s', storeFailureThreshold: 2 }),
    ).not.toThrow();
  });

  it('maxCost bounds a cost function, so a limit may fall back to a smaller one; a larger answer charges nothing', () => {
    const algorithm = fixedWindow({ limit: 100, window: '1m' });
    const fallback = { fallback: { algorithm: fixedWindow({ limit: 25, window: '1m' }), store: new MapStore() } };
    // Without maxCost a cost function may ask for the whole capacity, which the fallback cannot take.
    expect(() => limiter({ algorithm, cost: () => 1, onStoreError: fallback })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION' }),
    );
    const store = new MapStore();
    let cost = 2;
    const bounded = limiter({ algorithm, store, cost: () => cost, maxCost: 2, onStoreError: fallback });
    expect(bounded.decide({ ip: '192.0.2.1', headers: {} })).toMatchObject({ allowed: true, remaining: 98 });
    cost = 3;
    expect(() => bounded.decide({ ip: '192.0.2.1', headers: {} })).toThrow(
      expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }),
    );
    expect(bounded.limiters[0]!.maxCost).toBe(2);
    expect(store.states.size).toBe(1);
    // A limit's own maxCost wins over the middleware's.
    const perLimit = limiter({
      limits: [
        { algorithm, name: 'a', maxCost: 1 },
        { algorithm, name: 'b' },
      ],
      cost: () => 1,
      maxCost: 5,
    });
    expect(perLimit.limiters.map((l) => l.maxCost)).toEqual([1, 5]);
  });

  it('rejects a maxCost that is not a cost of the limit, or below its constant cost', () => {
    const algorithm = fixedWindow({ limit: 10, window: '1m' });
    for (const bad of [0, -1, 11, Number.NaN, null, '2']) {
      expect(() => limiter({ algorithm, cost: () => 1, maxCost: bad as number })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit.maxCost' }),
      );
    }
    expect(() => limiter({ algorithm, cost: 3, maxCost: 2 })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit.maxCost' }),
    );
    expect(() => limiter({ limits: [{ algorithm, maxCost: 20 }] })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit.limits[0].maxCost' }),
    );
  });

  it('decides several limits on local stores synchronously, calling a shared cost function once and checking it per limit', () => {
    let calls = 0;
    const engine = limiter({
      key: () => 'k',
      cost: () => {
        calls++;
        return 3;
      },
      limits: [
        { name: 'big', algorithm: fixedWindow({ limit: 10, window: '1m' }) },
        { name: 'small', algorithm: fixedWindow({ limit: 2, window: '1m' }) },
      ],
    });
    expect(() => engine.decide({ headers: {} })).toThrowError(
      expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }),
    );
    expect(calls).toBe(1);
    const two = limiter({
      key: () => 'k',
      limits: [
        { name: 'a', algorithm: fixedWindow({ limit: 10, window: '1m' }) },
        { name: 'b', algorithm: fixedWindow({ limit: 1, window: '1m' }) },
      ],
    });
    const admitted = two.decide({ headers: {} });
    expect(admitted).toMatchObject({ allowed: true, binding: 1 });
    const denied = two.decide({ headers: {} });
    expect(denied).toMatchObject({ allowed: false, deniedBy: 1, rolledBack: true });
  });

  it('keeps the memo of the default body per middleware', () => {
    const engine = limiter({ algorithm: fixedWindow({ limit: 1, window: '1m' }), key: () => 'k' });
    engine.decide({ headers: {} });
    const denied = engine.decide({ headers: {} }) as RateLimitResult;
    expect(engine.response.problems.of(denied)).toBe(problemBody(denied));
    expect(engine.response.problems.of(denied)).toBe(engine.response.problems.of(denied));
  });
});

describe('HttpRateLimiter: the adaptive option', () => {
  it('a permit after the rate limits; none free: the overload, its units given back; a skipped request takes none', async () => {
    const adaptive = adaptiveConcurrency({ min: 1, max: 1, timers: new FakeTimers() });
    const engine = limiter({
      algorithm: fixedWindow({ limit: 3, window: '1m' }),
      key: () => 'k',
      skip: (req) => req.headers.skip === '1',
      adaptive,
      priority: () => 'critical',
    });
    const first = (await engine.evaluate({ headers: {} }))!;
    expect([first.allowed, adaptive.inFlight]).toEqual([true, 1]);
    const refused = (await engine.evaluate({ headers: {} }))!;
    expect(refused).toMatchObject({
      allowed: false,
      overloaded: true,
      statusCode: 503,
      deniedBy: -2,
      retryAfterSeconds: 1,
    });
    expect(refused.rolledBack).toBe(true);
    expect(await engine.evaluate({ headers: { skip: '1' } })).toBeUndefined();
    await first.release();
    await first.release({ failed: true });
    expect(adaptive.snapshot().classes.critical).toEqual({ inFlight: 0, admitted: 1, shed: 1, failed: 0 });
    // The refused request's unit came back: 2 of 3 used.
    expect((await engine.evaluate({ headers: {} }))!.remaining).toBe(1);
  });

  it('refuses a priority without adaptive, and an adaptive that is not an adaptive limit', () => {
    expect(() => limiter({ algorithm: fixedWindow({ limit: 3, window: '1m' }), priority: () => 'critical' })).toThrow(
      /priority/,
    );
    expect(() =>
      limiter({ algorithm: fixedWindow({ limit: 3, window: '1m' }), adaptive: { limit: 5 } as never }),
    ).toThrow(/adaptive/);
  });
});
