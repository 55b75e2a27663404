/**
 * The limiter's failure policy against real Redis failures: the server stopped mid-run and started
 * again, the server paused (CLIENT PAUSE) beyond the timeout, and a flood of one key with the deny
 * cache. Every decision resolves (never a hung request, never an unhandled rejection) and says what
 * happened (`reason`), and the limiter emits 'storeError'.
 *
 * The limiters run on fake time: their timers (the store timeout) and their clock (the store-down
 * circuit's retry interval) move only when a test advances them, so a call to a Redis that does not
 * answer is timed out by `await time.advance(timeout)`, never by waiting. What stays real is Redis
 * itself: a server stopped and started again, a client reconnecting, a pause.
 *
 * Every test runs on each family's current major (ioredis 6, node-redis 6: test/support/clients.ts),
 * connected as most apps connect it (default reconnection and offline queue); the test reads Redis
 * through a separate ioredis client.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  combineLimiters,
  createLimiter,
  fixedWindow,
  tokenBucket,
  concurrency,
  StoreTimeoutError,
  type Decision,
  type Limiter,
  type Store,
  type StoreErrorEvent,
} from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore, type RedisClient } from '@rl/store-redis';
import { sleep, startRedisServer, type RedisServerHandle } from '@rl/test-support';
import { FAILURE, type ClientKind } from './support/clients.js';
import { cachedDenial } from './support/reset-heard.js';
import { outcomeOf } from './support/outcome.js';

let server: RedisServerHandle;
/** The client under test, of this test's client kind. */
let client: RedisClient;
/** A client the test reads Redis with (ioredis), never the store's. */
let inspect: Redis;
let counter = 0;
/** This test's fake time: the limiters' timers and their clock (window-aligned: fixed windows of 1m start at 0). */
let timers: FakeTimers;
const T0 = 1_800_000_000_000;
const clock = (): number => T0 + timers.now();
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  server = await startRedisServer();
  process.on('unhandledRejection', onUnhandled);
});

afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await server?.stop();
});

/** Registers, in the calling scope, the hooks that connect `kind`'s client before each test and close it after. */
function useClientOf(kind: ClientKind): void {
  beforeEach(async () => {
    timers = new FakeTimers();
    // A client as most apps create it: default reconnection and offline queue (connection errors while
    // the server is down are expected here, and ignored).
    client = await kind.standalone(server.url);
    inspect = new Redis(server.url);
    inspect.on('error', () => {});
    // Connect and load every script on this connection first, so that the first decision of a test is
    // not slowed by them on a busy machine (the tests below are about failures, not about warm-up).
    const store = new RedisStore({ client, prefix: 'warm-up:' });
    await store.peek('k', tokenBucket({ capacity: 1, refillRate: 1 }), 0, undefined);
    await store.peek('k', fixedWindow({ limit: 1, window: '1s' }), 0, undefined);
    await store.peek('k', concurrency({ limit: 1 }), 0, undefined);
  });

  afterEach(async () => {
    await kind.close(client);
    inspect.disconnect();
    // Give late rejections of abandoned commands a chance to surface as unhandled.
    await sleep(20);
    expect(unhandled).toEqual([]);
  });
}

function freshPrefix(): string {
  counter++;
  return `failure:${process.pid}:${Date.now().toString(36)}:${counter}`;
}

/** A limiter's options, its store optional. */
type TestLimiterOptions = Omit<Parameters<typeof createLimiter>[0], 'store'> & { store?: Store };

/** A limiter on this test's fake time (timers and clock), with a prefix of its own, on a new store of the client unless given one. */
function limiterOf(options: TestLimiterOptions): Limiter {
  return createLimiter({
    prefix: freshPrefix(),
    timers,
    clock,
    ...options,
    store: options.store ?? new RedisStore({ client }),
  });
}

/** Moves fake time on by `ms`, then waits for `pending`: calls to a Redis that does not answer time out. */
async function after<T>(ms: number, pending: Promise<T>): Promise<T> {
  await timers.advanceAsync(ms);
  return pending;
}

/** What `call` answers while Redis pauses its writes for `pauseMs`, fake time moved on by 50 ms (past the limiter's timeout); Redis unpaused after it. */
async function whileWritesPaused<T>(url: string, pauseMs: number, call: () => Promise<T>): Promise<T> {
  const admin = new Redis(url);
  try {
    await admin.client('PAUSE', pauseMs, 'WRITE');
    const answer = await after(50, call());
    await admin.client('UNPAUSE');
    return answer;
  } finally {
    admin.disconnect();
  }
}

/** Consumes until a decision comes from Redis again (reason undefined), moving fake time past the retry interval between tries (bounded). */
async function untilFromRedis(limiter: Limiter, retryMs: number): Promise<Decision> {
  let back = await limiter.consume('k');
  for (let i = 0; i < 20 && back.reason !== undefined; i++) {
    await timers.advanceAsync(retryMs);
    back = await limiter.consume('k');
  }
  return back;
}

function recordEvents(limiter: Limiter): StoreErrorEvent[] {
  const events: StoreErrorEvent[] = [];
  limiter.on('storeError', (event: StoreErrorEvent) => events.push(event));
  return events;
}

/** Makes the limits of one request's group, each by `limiterOf`, all on one new store of the client. */
function onOneStore(): (options: TestLimiterOptions) => Limiter {
  const store = new RedisStore({ client });
  return (options) => limiterOf({ ...options, store });
}

/**
 * A bucket of 100 tokens on a new store of the client, with a store timeout of `timeoutMs` and a
 * retry interval of 100 ms, once its first decision came from Redis; and its storeError events.
 */
async function decidedByRedis(timeoutMs: number): Promise<{ limiter: Limiter; events: StoreErrorEvent[] }> {
  const limiter = limiterOf({
    algorithm: tokenBucket({ capacity: 100, refillRate: 10 }),
    timeout: timeoutMs,
    storeRetryInterval: 100,
  });
  const events = recordEvents(limiter);
  expect((await limiter.consume('k')).reason).toBeUndefined();
  return { limiter, events };
}

/** Polls (bounded) until the client is connected again. */
async function reconnected(kind: ClientKind, redis: RedisClient): Promise<void> {
  for (let i = 0; i < 200 && !kind.ready(redis); i++) await sleep(25);
  expect(kind.ready(redis)).toBe(true);
}

async function restartServer(): Promise<void> {
  server = await startRedisServer({ port: server.port });
}

describe.each(FAILURE)('$name', (kind) => {
  useClientOf(kind);

  describe.skipIf(process.env.REDIS_URL !== undefined)('Redis stopped mid-run, then back', () => {
    it("'deny': decisions resolve denied with reason store-error or timeout, an event per failure, and Redis is used again once back", async () => {
      const { limiter, events } = await decidedByRedis(250);

      await server.stop();
      const during = await after(250, Promise.all(Array.from({ length: 20 }, () => limiter.consume('k'))));
      expect(during.every((d) => !d.allowed)).toBe(true);
      expect(during.every((d) => d.reason === 'store-error' || d.reason === 'timeout')).toBe(true);
      expect(events.length).toBeGreaterThan(0);
      expect(events.every((e) => e.action === 'deny' && e.key.endsWith(':k'))).toBe(true);

      await restartServer();
      await reconnected(kind, client);
      await timers.advanceAsync(150); // past storeRetryInterval
      const back = await untilFromRedis(limiter, 110);
      expect(back.reason).toBeUndefined();
      expect(back.allowed).toBe(true);
    });

    it("'allow' admits with a reason; a fallback applies a local limit while Redis is down and Redis again once back", async () => {
      const limit = onOneStore();
      const allow = limit({
        algorithm: fixedWindow({ limit: 10, window: '1m' }),
        onStoreError: 'allow',
        timeout: 250,
        storeRetryInterval: 100,
      });
      const fallback = limit({
        algorithm: fixedWindow({ limit: 10, window: '1m' }),
        // Each request costs 1, so the smaller fallback (limit 2) can take every cost charged.
        maxCost: 1,
        timeout: 250,
        storeRetryInterval: 100,
        onStoreError: {
          fallback: {
            algorithm: fixedWindow({ limit: 2, window: '1m' }),
            store: new MemoryStore({ sweepInterval: false }),
          },
        },
      });
      const events = recordEvents(fallback);
      expect((await fallback.consume('k')).reason).toBeUndefined();

      await server.stop();
      const allowed = await after(250, allow.consume('k'));
      expect(allowed).toMatchObject({ allowed: true });
      expect(['store-error', 'timeout']).toContain(allowed.reason);
      const local = [];
      for (let i = 0; i < 3; i++) local.push(await after(250, fallback.consume('k')));
      expect(local.map((d) => [d.allowed, d.reason])).toEqual([
        [true, 'fallback'],
        [true, 'fallback'],
        [false, 'fallback'],
      ]);
      expect(events.some((e) => e.action === 'fallback')).toBe(true);

      await restartServer();
      await reconnected(kind, client);
      const back = await untilFromRedis(fallback, 110);
      expect(back.reason).toBeUndefined();
      expect(back.allowed).toBe(true);
    });

    it('concurrency permits: acquire falls back while Redis is down and release never throws', async () => {
      const limiter = limiterOf({
        algorithm: concurrency({ limit: 5 }),
        timeout: 250,
        storeRetryInterval: 100,
        onStoreError: {
          fallback: { algorithm: concurrency({ limit: 1 }), store: new MemoryStore({ sweepInterval: false }) },
        },
      });
      const held = await limiter.acquire('k');
      expect(held.reason).toBeUndefined();
      await server.stop();
      const first = await after(250, limiter.acquire('k'));
      const second = await after(250, limiter.acquire('k'));
      expect([first.allowed, first.reason, second.allowed, second.reason]).toEqual([
        true,
        'fallback',
        false,
        'fallback',
      ]);
      await first.release();
      expect((await after(250, limiter.acquire('k'))).allowed).toBe(true);
      await expect(after(250, held.release())).resolves.toBeUndefined();
      await restartServer();
    });
  });

  describe('Redis paused beyond the timeout (CLIENT PAUSE)', () => {
    it('decisions resolve denied with reason timeout while Redis is paused, then come from Redis again', async () => {
      const { limiter, events } = await decidedByRedis(100);

      const admin = new Redis(server.url);
      try {
        await admin.client('PAUSE', 400, 'ALL');
        const paused = await after(100, Promise.all(Array.from({ length: 10 }, () => limiter.consume('k'))));
        expect(paused.every((d) => !d.allowed && d.reason === 'timeout')).toBe(true);
        expect(events.some((e) => e.reason === 'timeout' && e.error.name === 'StoreTimeoutError')).toBe(true);
        await admin.client('UNPAUSE');
      } finally {
        admin.disconnect();
      }
      await timers.advanceAsync(150); // past storeRetryInterval
      const back = await untilFromRedis(limiter, 110);
      expect(back.reason).toBeUndefined();
    });
  });

  describe('a quota lease while Redis is paused beyond the timeout (CLIENT PAUSE)', () => {
    it('requests whose block times out are denied once each (one failure per block), the late block is given back, and nothing is lost to the quota', async () => {
      const store = new RedisStore({ client });
      const algorithm = fixedWindow({ limit: 100, window: '1h' });
      const limiter = limiterOf({ algorithm, store, timeout: 100, storeRetryInterval: 100, lease: { units: 10 } });
      const events = recordEvents(limiter);
      const admin = new Redis(server.url);
      try {
        await admin.client('PAUSE', 400, 'WRITE');
        const paused = await after(100, Promise.all(Array.from({ length: 5 }, () => limiter.consume('k'))));
        // One block asked for (the others waited behind it), timed out: each request gets the policy's
        // decision for its own cost, and the store failed once.
        expect(paused.map((d) => [d.allowed, d.reason])).toEqual(Array.from({ length: 5 }, () => [false, 'timeout']));
        expect(events.length).toBe(1);
        await admin.client('UNPAUSE');
      } finally {
        admin.disconnect();
      }
      // The block Redis applied late is given back: the key's count is back at 0.
      const peek = createLimiter({ algorithm, store, clock, prefix: limiter.prefix, timeout: false });
      for (let i = 0; i < 40 && (await peek.peek('k')).remaining !== 100; i++) await sleep(25);
      expect((await peek.peek('k')).remaining).toBe(100);
      await timers.advanceAsync(150);
      const back = await untilFromRedis(limiter, 110);
      expect([back.allowed, back.reason]).toEqual([true, undefined]);
      await limiter.close();
      expect((await peek.peek('k')).remaining).toBe(99);
    });
  });

  /** A store that counts the calls reaching the RedisStore it wraps (every call still goes to Redis). */
  function counting(inner: RedisStore): Store & { calls: number } {
    const store = {
      calls: 0,
      capabilities: inner.capabilities,
      charge: (...args: Parameters<Store['charge']>) => (store.calls++, inner.charge(...args)),
      peek: (...args: Parameters<Store['peek']>) => (store.calls++, inner.peek(...args)),
      giveBack: (...args: Parameters<Store['giveBack']>) => (store.calls++, inner.giveBack(...args)),
      reset: (...args: Parameters<Store['reset']>) => (store.calls++, inner.reset(...args)),
      acquire: (...args: Parameters<Store['acquire']>) => (store.calls++, inner.acquire(...args)),
      release: (...args: Parameters<Store['release']>) => (store.calls++, inner.release(...args)),
    };
    return store;
  }

  describe('the store-down circuit', () => {
    it('while Redis is paused, one probe at a time reaches it; the other decisions repeat the reason (timeout)', async () => {
      const store = counting(new RedisStore({ client }));
      const limiter = limiterOf({
        algorithm: tokenBucket({ capacity: 100, refillRate: 10 }),
        store,
        timeout: 100,
        storeRetryInterval: 100,
        storeFailureThreshold: 1,
      });
      expect((await limiter.consume('k')).reason).toBeUndefined();
      const admin = new Redis(server.url);
      try {
        await admin.client('PAUSE', 600, 'ALL');
        expect((await after(100, limiter.consume('k'))).reason).toBe('timeout'); // opens the circuit
        const skipped = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
        expect(skipped.every((d) => d.reason === 'timeout' && !d.allowed)).toBe(true);
        await timers.advanceAsync(120); // past storeRetryInterval, still paused
        const callsBefore = store.calls;
        const probing = Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
        expect(store.calls - callsBefore).toBe(1);
        expect((await after(100, probing)).every((d) => d.reason === 'timeout')).toBe(true);
        expect(store.calls - callsBefore).toBe(1);
        await admin.client('UNPAUSE');
      } finally {
        admin.disconnect();
      }
    });

    it('a permit granted after its acquire timed out is given back, not held until its lease expires', async () => {
      const store = new RedisStore({ client });
      const algorithm = concurrency({ limit: 3, lease: '1h' });
      const limiter = limiterOf({ algorithm, store, timeout: 50, storeRetryInterval: 50 });
      const timedOut = await whileWritesPaused(server.url, 200, () => limiter.acquire('k'));
      expect(timedOut.reason).toBe('timeout');
      // Bounded wait (real time: Redis's own work) for the late grant and its release to reach Redis.
      let inUse = -1;
      for (let i = 0; i < 40 && inUse !== 0; i++) {
        await sleep(25);
        inUse = await inspect.zcard(store.redisKeys(limiter.storageKey('k'), algorithm)[0]!);
      }
      expect(inUse).toBe(0);
    });
  });

  describe('Redis paused (CLIENT PAUSE WRITE): resets and late grants', () => {
    it('a reset while Redis is paused rejects with the StoreTimeoutError after a storeError event, at the control floor (1 s, past the 100 ms timeout of a request)', async () => {
      const limiter = limiterOf({
        algorithm: tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' }),
        timeout: 100,
      });
      const events = recordEvents(limiter);
      const admin = new Redis(server.url);
      try {
        await admin.client('PAUSE', 1000, 'WRITE');
        const outcome = outcomeOf(limiter.reset('k'));
        await timers.advanceAsync(100);
        expect(outcome()).toBe('pending');
        await timers.advanceAsync(900); // the control floor: 1 s (CONTROL_TIMEOUT_FLOOR_MS in core)
        expect(outcome()).toBeInstanceOf(StoreTimeoutError);
        expect(events.map((e) => [e.reason, e.action])).toEqual([['timeout', 'deny']]);
        await admin.client('UNPAUSE');
      } finally {
        admin.disconnect();
      }
    });

    it('the units of a consume that timed out (answered denied) and that Redis admits late are given back', async () => {
      const limiter = limiterOf({
        algorithm: tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }),
        timeout: 50,
      });
      expect((await limiter.consume('k', 2)).remaining).toBe(3);
      const timedOut = await whileWritesPaused(server.url, 1000, () => limiter.consume('k', 2));
      expect(timedOut).toMatchObject({ allowed: false, reason: 'timeout' });
      // A peek on the same connection runs after the late consume: it sees its 2 units until the
      // give-back has reached Redis. Bounded wait (real time: Redis's own work).
      let remaining = -1;
      for (let i = 0; i < 40 && remaining !== 3; i++) {
        await sleep(25);
        remaining = (await limiter.peek('k')).remaining;
      }
      expect(remaining).toBe(3);
    });
  });

  describe('Redis paused (CLIENT PAUSE WRITE): a request of two limits in one group', () => {
    it('the late answer of a limit its group gave back is no grant: nothing is given back twice', async () => {
      const limit = onOneStore();
      const roomy = limit({ algorithm: fixedWindow({ limit: 5, window: '1m' }), timeout: 50, onStoreError: 'allow' });
      const tight = limit({ algorithm: fixedWindow({ limit: 1, window: '1m' }), timeout: 50, onStoreError: 'deny' });
      await roomy.consume('k');
      await tight.consume('k');
      const group = combineLimiters([roomy, tight]);
      // Both time out: `roomy` is admitted by its policy, `tight` denied by its own, so the request is
      // denied and `roomy`'s admission is not served. Redis then runs the group late: `tight` denies,
      // and `roomy`'s charge is given back in the same script; a give-back of that late answer as a
      // grant would give the unit back a second time (6 of 5).
      const denied = await whileWritesPaused(server.url, 1000, () => group.consume('k'));
      expect([denied.allowed, denied.deniedBy, denied.decisions[0]?.reason]).toEqual([false, 1, 'timeout']);
      // Bounded real wait: Redis's own work, and any give-back that would follow it.
      let remaining: number[] = [];
      for (let i = 0; i < 20; i++) {
        await sleep(25);
        remaining = [(await roomy.peek('k')).remaining, (await tight.peek('k')).remaining];
      }
      expect(remaining).toEqual([4, 0]);
    });
  });

  describe('Redis paused: one limit of a group answered by its failure policy, the other in time', () => {
    /** `group.consume('k')` while Redis is paused: the timeouts of 50 ms run out, then Redis answers. */
    async function pausedThenAnswered<T>(consume: () => Promise<T>): Promise<T> {
      const admin = new Redis(server.url);
      try {
        await admin.client('PAUSE', 1000, 'WRITE');
        const pending = consume();
        await timers.advanceAsync(50);
        await admin.client('UNPAUSE');
        return await pending;
      } finally {
        admin.disconnect();
      }
    }

    it.each([
      ['the admitted limit first', true],
      ['the admitted limit second', false],
    ])(
      '%s: the request is admitted and the other limit charged, as if charged one after another',
      async (_name, spentFirst) => {
        const limit = onOneStore();
        // `spent` is used up and admits by its policy when it times out (50 ms); `roomy` waits for Redis.
        const spent = limit({
          algorithm: fixedWindow({ limit: 1, window: '1m' }),
          timeout: 50,
          onStoreError: 'allow',
          denyCache: false,
        });
        const roomy = limit({ algorithm: fixedWindow({ limit: 3, window: '1m' }), timeout: 2000 });
        await spent.consume('k');
        const group = combineLimiters(spentFirst ? [spent, roomy] : [roomy, spent]);
        const d = await pausedThenAnswered(() => group.consume('k'));
        expect([d.allowed, d.deniedBy]).toEqual([true, -1]);
        // Redis decided the group late and gave back (or never asked) `roomy`: charged again, alone.
        expect((await roomy.peek('k')).remaining).toBe(2);
      },
    );
  });

  describe('timeouts and a busy event loop', () => {
    it('an answer that arrived while the event loop was blocked past the timeout is used, not timed out', async () => {
      const store = new RedisStore({ client });
      const limiter = limiterOf({ algorithm: tokenBucket({ capacity: 10, refillRate: 1 }), store, timeout: 100 });
      await limiter.consume('warm-up');
      const pending = limiter.consume('k');
      // node-redis writes its commands in a setImmediate: let that run, so the command is on the wire
      // before the block (ioredis writes at once). Without it the answer cannot arrive during the block.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // Block the event loop for longer than Redis takes to answer, into the socket; then the timeout
      // falls due before the answer has been read: in the timers phase of the event loop, as a real
      // timer would (a 0 ms timer only places it there), so the poll phase that reads the socket follows.
      const until = performance.now() + 300;
      while (performance.now() < until);
      await new Promise<void>((resolve) => setTimeout(() => resolve(timers.advance(100)), 0));
      const decision = await pending;
      expect(decision.reason).toBeUndefined();
      expect(decision.remaining).toBe(9);
    });
  });

  describe('deny cache under a flood from one key', () => {
    async function evalshaCalls(): Promise<number> {
      const stats = await inspect.info('commandstats');
      return (
        Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) +
        Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0)
      );
    }

    it.each([
      ['sequential', 1],
      ['50 in flight', 50],
    ] as const)('%s: denied requests are answered locally, with almost no Redis calls', async (name, inFlight) => {
      const store = new RedisStore({ client });
      const limiter = createLimiter({
        algorithm: tokenBucket({ capacity: 10, refillRate: 1, interval: '1h' }),
        store,
        prefix: freshPrefix(),
        timeout: 1000,
      });
      // The store listens to notices from its first cached denial, and its cache answers once that
      // subscription is live (a few ms, once per store): done before the flood is measured.
      for (let i = 0; i < 10; i++) await limiter.consume('first');
      expect((await cachedDenial(limiter, 'first')).reason).toBe('deny-cache');
      for (let i = 0; i < 10; i++) expect((await limiter.consume('flood')).allowed).toBe(true);
      const before = await evalshaCalls();
      const total = 1000;
      const decisions: Decision[] = [];
      for (let sent = 0; sent < total; sent += inFlight) {
        decisions.push(...(await Promise.all(Array.from({ length: inFlight }, () => limiter.consume('flood')))));
      }
      const calls = (await evalshaCalls()) - before;
      expect(decisions.every((d) => !d.allowed)).toBe(true);
      expect(decisions.filter((d) => d.reason === 'deny-cache').length).toBeGreaterThanOrEqual(total - inFlight);
      // Only the requests already in flight when the first denial came back reach Redis.
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(calls).toBeLessThanOrEqual(inFlight);
      console.info(
        `deny cache, ${name}: ${calls} Redis calls for ${total} denied requests (${((calls / total) * 100).toFixed(1)} per 100)`,
      );
    });
  });
});
