import {
  combineLimiters,
  concurrency,
  createLimiter,
  fixedWindow,
  leakyBucket,
  slidingWindowLog,
  tokenBucket,
} from '@rl/core';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeTimers } from '@rl/core/testing';
import { MAX_PLAIN_KEY_LENGTH, MemoryStore } from './memory-store.js';

const stores: MemoryStore[] = [];
function newStore(options?: ConstructorParameters<typeof MemoryStore>[0]): MemoryStore {
  const store = new MemoryStore(options);
  stores.push(store);
  return store;
}
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

describe('MemoryStore options', () => {
  it('rejects bad options at construction', () => {
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'MemoryStore.maxKeys' }),
    );
    expect(() => new MemoryStore({ sweepInterval: '1 fortnight' as never })).toThrow(/MemoryStore.sweepInterval/);
    expect(() => new MemoryStore({ maxkeys: 5 } as never)).toThrow(/no such option/);
  });

  it('takes null as a bad value, never as "not given", and an array as no options object', () => {
    expect(() => new MemoryStore({ maxKeys: null } as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'MemoryStore.maxKeys' }),
    );
    expect(() => new MemoryStore({ sweepInterval: null } as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'MemoryStore.sweepInterval' }),
    );
    expect(() => new MemoryStore({ clock: null } as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'MemoryStore.clock' }),
    );
    expect(() => new MemoryStore([] as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'MemoryStore' }),
    );
  });

  it('rejects a sweep interval longer than a Node timer can wait (it would fire every millisecond)', () => {
    expect(() => new MemoryStore({ sweepInterval: '30d' })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'MemoryStore.sweepInterval' }),
    );
    new MemoryStore({ sweepInterval: '24d' }).close();
  });
});

describe('sweeping', () => {
  it('removes state that has fully recovered, and only that', async () => {
    const store = newStore({ sweepInterval: false });
    let now = 0;
    const bucket = createLimiter({
      algorithm: tokenBucket({ capacity: 10, refillRate: 10 }),
      store,
      clock: () => now,
      prefix: 'tb',
    });
    const window = createLimiter({
      algorithm: fixedWindow({ limit: 5, window: '10s' }),
      store,
      clock: () => now,
      prefix: 'fw',
    });
    const log = createLimiter({
      algorithm: slidingWindowLog({ limit: 5, window: '2s' }),
      store,
      clock: () => now,
      prefix: 'log',
    });
    await bucket.consume('a', 10); // full again at 1 s
    await bucket.consume('b', 1); // full again at 0.1 s
    await window.consume('a'); // expires at 10 s
    await log.consume('a'); // expires at 2 s
    expect(store.keyCount).toBe(4);
    expect(store.sweep(500)).toBe(1);
    expect(store.sweep(999)).toBe(0);
    expect(store.sweep(1000)).toBe(1);
    expect(store.sweep(2000)).toBe(1);
    expect(store.keyCount).toBe(1);
    // A swept key starts fresh, exactly as if it had been kept.
    now = 5000;
    expect((await bucket.consume('a')).remaining).toBe(9);
    expect((await window.consume('a')).remaining).toBe(3);
  });

  it('never drops a key that another configuration of the same kind still needs', async () => {
    const store = newStore({ sweepInterval: false });
    const slow = createLimiter({
      algorithm: tokenBucket({ capacity: 10, refillRate: 1 }),
      store,
      clock: () => 0,
      prefix: 'p',
    });
    const fast = createLimiter({
      algorithm: tokenBucket({ capacity: 10, refillRate: 100 }),
      store,
      clock: () => 0,
      prefix: 'q',
    });
    await slow.consume('k', 10);
    await fast.consume('k', 10);
    // With the fast configuration's refill, both would be full at 100 ms; the slow one needs 10 s.
    store.sweep(5000);
    expect((await slow.peek('k')).remaining).toBe(0);
  });

  it("never sweeps past a limiter's own clock: a frozen or simulated clock's state stays while the timers run on", async () => {
    const timers = new FakeTimers();
    const store = new MemoryStore({ sweepInterval: 20, timers });
    let now = 0;
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 3, window: '1m' }), store, clock: () => now });
    await limiter.consume('k', 2);
    timers.advance(600_000); // ten minutes on the timers; the limiter's clock has not moved
    expect(store.keyCount).toBe(1);
    expect((await limiter.consume('k', 2)).allowed).toBe(false);
    now = 60_000; // the limiter's clock reaches the window's end: the state has recovered
    await limiter.peek('k');
    timers.advance(40);
    expect(store.keyCount).toBe(0);
    store.close();
  });

  it("runs from one unref'd timer on its timers, and stops on close", async () => {
    const timers = new FakeTimers();
    const unrefs: unknown[] = [];
    // Handles with `unref`, as Node's: the store unrefs each one.
    const nodeLike = {
      now: () => timers.now(),
      setTimeout: (callback: () => void, ms: number) => {
        const handle = { id: timers.setTimeout(callback, ms), unref: () => unrefs.push(handle) };
        return handle;
      },
      clearTimeout: (handle: unknown) => timers.clearTimeout((handle as { id: unknown }).id),
    };
    const store = new MemoryStore({ sweepInterval: 20, timers: nodeLike });
    const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 1, refillRate: 1000 }), store });
    await limiter.consume('a');
    expect(store.keyCount).toBe(1);
    // The first sweep takes the latest time seen as now; the next one projects it 20 ms on: the bucket is full.
    timers.advance(20);
    expect(store.keyCount).toBe(1);
    timers.advance(20);
    expect(store.keyCount).toBe(0);
    expect(timers.pending).toBe(1);
    expect(unrefs.length).toBe(3);
    store.close();
    expect(timers.pending).toBe(0);
    expect(() => store.charge({ key: 'a', algorithm: limiter.algorithm!, cost: 1 }, 0)).toThrow(
      expect.objectContaining({ code: 'RL_STORE_CLOSED' }),
    );
  });
});

describe('quotas built per request (issue 25)', () => {
  /** The collector, for a count of what the store keeps alive (V8's flag set at run time: no node flag needed). */
  function collector(): () => void {
    v8.setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  }

  it("keeps no algorithm object alive: expiry is each key's own deadline, not a list of every object seen", async () => {
    const gc = collector();
    const store = newStore({ sweepInterval: false });
    const limiter = createLimiter({ store, clock: () => 0 });
    const refs: WeakRef<object>[] = [];
    // A quota read from a database per request: a new object each time, with the same numbers or new ones.
    for (let i = 0; i < 2000; i++) {
      const quota =
        i % 2 === 0
          ? tokenBucket({ capacity: 100, refillRate: 10 })
          : slidingWindowLog({ limit: 10 + (i % 7), window: '1m' });
      if (i % 100 === 0) refs.push(new WeakRef(quota));
      limiter.consumeSync(`user-${i % 50}`, 1, quota);
    }
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    // At most the last one, kept as the store's one-entry cache of the last table used.
    expect(refs.filter((ref) => ref.deref() !== undefined).length).toBeLessThanOrEqual(1);
    // And each key still expires with the configuration that wrote it.
    expect(store.sweep(0)).toBe(0);
    expect(store.sweep(10 * 60_000)).toBe(50);
  });

  it('the heap after 100,000 quotas built per request is that after 1,000, within a constant', () => {
    const gc = collector();
    const store = newStore({ sweepInterval: false });
    const limiter = createLimiter({ store, clock: () => 0 });
    const run = (from: number, to: number): void => {
      for (let i = from; i < to; i++)
        limiter.consumeSync(`user-${i % 1000}`, 1, tokenBucket({ capacity: 100 + (i % 13), refillRate: 10 }));
    };
    const heap = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    run(0, 1_000);
    const after1k = heap();
    run(1_000, 100_000);
    const after100k = heap();
    // 0.9-1 KB per request was kept before: 99,000 more requests would be about 90 MB.
    expect(after100k - after1k).toBeLessThan(2_000_000);
  });
});

describe('maxKeys and eviction', () => {
  it('keeps at most maxKeys keys, evicting the least recently used first', async () => {
    const store = newStore({ maxKeys: 3, sweepInterval: false });
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 5, window: '1h' }), store, clock: () => 0 });
    await limiter.consume('a');
    await limiter.consume('b');
    await limiter.consume('c');
    await limiter.consume('a'); // a is recently used
    await limiter.consume('d'); // evicts b, the least recently used
    expect(store.keyCount).toBe(3);
    expect((await limiter.peek('a')).remaining).toBe(3);
    expect((await limiter.peek('b')).remaining).toBe(5);
    expect((await limiter.peek('c')).remaining).toBe(4);
    expect((await limiter.peek('d')).remaining).toBe(4);
  });

  it('evicts across algorithm kinds when the full store inserts into an empty table', async () => {
    const store = newStore({ maxKeys: 2, sweepInterval: false });
    const window = createLimiter({ algorithm: fixedWindow({ limit: 5, window: '1h' }), store, clock: () => 0 });
    const log = createLimiter({ algorithm: slidingWindowLog({ limit: 5, window: '1h' }), store, clock: () => 0 });
    await window.consume('a');
    await window.consume('b');
    await log.consume('c');
    expect(store.keyCount).toBe(2);
  });

  it('every table makes room through the store before it adds a key: a settle above the estimate, a log, a lease', () => {
    const store = newStore({ maxKeys: 2, sweepInterval: false });
    const window = fixedWindow({ limit: 5, window: '1h' });
    store.charge({ key: 'a', algorithm: window, cost: 1 }, 0);
    store.charge({ key: 'b', algorithm: window, cost: 1 }, 0);
    // A settle above the estimate of a key with no state makes one (the numeric table).
    store.settle('c', window, { cost: 1, actual: 3, chargedAt: 0, delayMs: 0, maxDebt: 0 }, 0);
    expect(store.keyCount).toBe(2);
    expect(store.peek('c', window, 0, 0).remaining).toBe(3);
    store.charge({ key: 'd', algorithm: slidingWindowLog({ limit: 5, window: '1h' }), cost: 1 }, 0);
    expect(store.keyCount).toBe(2);
    expect(store.acquire('e', concurrency({ limit: 1 }), 'lease', 0).allowed).toBe(true);
    expect(store.keyCount).toBe(2);
  });

  it('keys of limiters with and without a prefix share maxKeys: one hand over every scope, one sweep', async () => {
    const store = newStore({ maxKeys: 4, sweepInterval: false });
    const algorithm = fixedWindow({ limit: 5, window: '1h' });
    const a = createLimiter({ algorithm, store, prefix: 'a', clock: () => 0 });
    const b = createLimiter({ algorithm, store, prefix: 'b', clock: () => 0 });
    const none = createLimiter({ algorithm, store, clock: () => 0 });
    await a.consume('1');
    await b.consume('1');
    await none.consume('1');
    // Without a prefix, `a:2` is the storage key of a's key `2`: one state, however it is charged.
    await none.consume('a:2');
    expect((await a.peek('2')).remaining).toBe(4);
    expect(store.keyCount).toBe(4);
    for (const [limiter, key] of [
      [a, '1'],
      [b, '1'],
      [none, '1'],
      [a, '2'],
    ] as const)
      await limiter.consume(key);
    // Full, every key used since the hand last passed: its first pass clears the marks, the second
    // evicts the first key it meets (the root scope's `1`, then the scopes in the order learnt).
    await b.consume('3');
    expect(store.keyCount).toBe(4);
    expect((await none.peek('1')).remaining).toBe(5);
    expect((await a.peek('1')).remaining).toBe(3);
    expect((await a.peek('2')).remaining).toBe(3);
    expect((await b.peek('1')).remaining).toBe(3);
    expect(store.sweep(3_600_000)).toBe(4);
    expect(store.keyCount).toBe(0);
  });

  it('a flood of distinct keys stays within maxKeys and bounded memory', async () => {
    const store = newStore({ maxKeys: 10_000, sweepInterval: false });
    const limiter = createLimiter({
      algorithm: leakyBucket({ capacity: 5, leakRate: 1, interval: '1h' }),
      store,
      clock: () => 0,
    });
    for (let i = 0; i < 300_000; i++) await limiter.consume(`flood-${i}`);
    expect(store.keyCount).toBe(10_000);
    // The most recent keys are there; the first ones were evicted.
    expect((await limiter.peek('flood-299999')).remaining).toBe(4);
    expect((await limiter.peek('flood-0')).remaining).toBe(5);
  });

  it('each eviction costs a constant number of steps however many came before (one CLOCK hand, not a new scan per eviction)', () => {
    // A new iterator per eviction walks again over the deleted entries that earlier evictions left at
    // the start of the Map's table: a flood of distinct keys got slower with every key. The hand is
    // kept, so iterators are created once per pass over the keys, not once per eviction.
    const store = newStore({ maxKeys: 1_000, sweepInterval: false });
    const limiter = createLimiter({
      algorithm: tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }),
      store,
      clock: () => 0,
    });
    for (let i = 0; i < 1_000; i++) limiter.consumeSync(`fill-${i}`);
    const iterate = vi.spyOn(Map.prototype, Symbol.iterator);
    const entries = vi.spyOn(Map.prototype, 'entries');
    try {
      for (let i = 0; i < 20_000; i++) limiter.consumeSync(`flood-${i}`);
      expect(store.keyCount).toBe(1_000);
      // 20,000 evictions over 1,000 keys: about 20 passes of the hand.
      expect(iterate.mock.calls.length + entries.mock.calls.length).toBeLessThanOrEqual(25);
    } finally {
      iterate.mockRestore();
      entries.mockRestore();
    }
    expect(limiter.consumeSync('flood-19999').remaining).toBe(3);
    expect(limiter.consumeSync('flood-0').remaining).toBe(4);
  });
});

/**
 * A limit of 1 per `window` with a lockout of `blockDuration` on a store of `maxKeys`, its clock's
 * `now` set by the test, and `block(key)`: two requests of `key`, the second denied and blocked.
 */
function lockouts(maxKeys: number, window: '1h' | '1s', blockDuration: '1h' | '10s') {
  const store = newStore({ maxKeys, sweepInterval: false });
  const clock = { now: () => 0 };
  const limiter = createLimiter({
    algorithm: fixedWindow({ limit: 1, window }),
    store,
    clock: () => clock.now(),
    blockDuration,
  });
  const block = (key: string): void => {
    limiter.consumeSync(key);
    expect(limiter.consumeSync(key).allowed).toBe(false);
  };
  return { limiter, clock, block };
}

describe('a lockout flood at maxKeys (issue 25)', () => {
  it('each new block costs a constant number of steps: no sweep of the table per block', () => {
    const { limiter, clock, block } = lockouts(1_000, '1h', '1h');
    let now = 0;
    clock.now = () => now;
    for (let i = 0; i < 1_000; i++) block(`fill-${i}`);
    // A sweep per new block iterated the whole table: one Map iterator per block at least.
    const iterate = vi.spyOn(Map.prototype, Symbol.iterator);
    const entries = vi.spyOn(Map.prototype, 'entries');
    try {
      for (let i = 0; i < 10_000; i++) {
        now += 1;
        block(`flood-${i}`);
      }
      // A new block looks at 8 blocks at most: 10,000 of them over a table of 1,000 live ones are 80
      // passes of the block table's hand, and 10 of the state table's (a sweep per block was 10,000).
      expect(iterate.mock.calls.length + entries.mock.calls.length).toBeLessThanOrEqual(100);
    } finally {
      iterate.mockRestore();
      entries.mockRestore();
    }
    // The newest blocks hold; what room needed was taken from the oldest.
    expect(limiter.consumeSync('flood-9999')).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 - 0 });
  });

  it('drops an ended block before a live one', () => {
    const { limiter, clock, block } = lockouts(3, '1s', '10s');
    let now = 0;
    clock.now = () => now;
    block('short');
    now = 5_000;
    block('a');
    block('b');
    // 'short' ended at 10 s; at 11 s a new block drops it, not 'a' or 'b'.
    now = 11_000;
    block('c');
    expect(limiter.consumeSync('a')).toMatchObject({ allowed: false });
    expect(limiter.consumeSync('b')).toMatchObject({ allowed: false });
  });
});

describe('concurrency leases', () => {
  it('a key with no live lease is dropped when its last lease is released', async () => {
    const store = newStore({ sweepInterval: false });
    const limiter = createLimiter({ algorithm: concurrency({ limit: 2 }), store });
    const lease = await limiter.acquire('k');
    expect(store.keyCount).toBe(1);
    await lease.release();
    expect(store.keyCount).toBe(0);
  });
});

describe('combined limits on two stores', () => {
  it('when a later limit throws (its store is closed), the units an earlier one admitted are given back', async () => {
    const open = newStore();
    const closed = newStore();
    const tenant = createLimiter({
      algorithm: tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' }),
      store: open,
      clock: () => 1_000,
    });
    const user = createLimiter({
      algorithm: fixedWindow({ limit: 2, window: '1h' }),
      store: closed,
      clock: () => 1_000,
    });
    closed.close();
    const group = combineLimiters([tenant, user]);
    await expect(group.consume(['acme', 'alice'])).rejects.toMatchObject({ code: 'RL_STORE_CLOSED' });
    expect((await tenant.peek('acme')).remaining).toBe(3);
  });
});

describe('lockouts and a clock that goes back', () => {
  it('finds the key blocked again when the clock goes back into a block that had ended (as on Redis)', () => {
    let now = 1_000_000;
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 1, window: '15m' }),
      store: new MemoryStore(),
      clock: () => now,
      blockDuration: '1h',
    });
    limiter.consumeSync('k');
    expect(limiter.consumeSync('k').retryAfterMs).toBe(3_600_000);
    now += 3_600_000;
    limiter.consumeSync('k');
    now -= 1;
    expect(limiter.consumeSync('k')).toMatchObject({ allowed: false, retryAfterMs: 1 });
  });
});

describe('long keys', () => {
  // A request header can carry 16 KB: such keys are held by their digest, so what a key costs is bounded.
  const long = (tail: string): string => `${'x'.repeat(16_000)}${tail}`;

  it.each([
    ['fixed window', fixedWindow({ limit: 2, window: '1m' })],
    ['sliding log', slidingWindowLog({ limit: 2, window: '1m' })],
    ['token bucket', tokenBucket({ capacity: 2, refillRate: 1 })],
  ])(
    '%s: two long keys with a common start keep their own state; the same long key shares it, through undo and reset',
    async (_label, algorithm) => {
      const store = newStore();
      const limiter = createLimiter({ algorithm, store, clock: () => 0 });
      expect((await limiter.consume(long('a'))).remaining).toBe(1);
      expect((await limiter.consume(long('a'))).remaining).toBe(0);
      expect((await limiter.consume(long('a'))).allowed).toBe(false);
      expect((await limiter.consume(long('b'))).remaining).toBe(1);
      await limiter.undo(long('a'));
      expect((await limiter.peek(long('a'))).remaining).toBe(1);
      await limiter.reset(long('a'));
      expect((await limiter.peek(long('a'))).remaining).toBe(2);
      expect((await limiter.peek(long('b'))).remaining).toBe(1);
      expect(store.keyCount).toBe(1);
      // What the tables hold: no key longer than the bound (white-box: the memory is what is tested).
      const tables = store as unknown as {
        numeric: Map<string, { index: Map<string, unknown> }>;
        logs: { index: Map<string, unknown> };
      };
      const held = [...tables.numeric.values(), tables.logs].flatMap((table) => [...table.index.keys()]);
      expect(held).toHaveLength(1);
      expect(held[0]!.length).toBeLessThanOrEqual(MAX_PLAIN_KEY_LENGTH);
    },
  );

  it('two long keys that differ only in a lone surrogate keep their own state (the digest is of UTF-16, not UTF-8)', async () => {
    const store = newStore();
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 1, window: '1m' }), store, clock: () => 0 });
    expect((await limiter.consume(long('\uD800'))).allowed).toBe(true);
    expect((await limiter.consume(long('\uDC00'))).allowed).toBe(true);
    expect((await limiter.consume(long('\uD800'))).allowed).toBe(false);
  });

  it('a concurrency permit on a long key is held and released', async () => {
    const store = newStore();
    const limiter = createLimiter({ algorithm: concurrency({ limit: 1 }), store, clock: () => 0 });
    const held = await limiter.acquire(long('a'));
    expect(held.allowed).toBe(true);
    expect((await limiter.acquire(long('a'))).allowed).toBe(false);
    expect((await limiter.acquire(long('b'))).allowed).toBe(true);
    await held.release();
    expect((await limiter.acquire(long('a'))).allowed).toBe(true);
  });

  it('a key of exactly MAX_PLAIN_KEY_LENGTH is held as it is, one longer by its digest, apart from each other', async () => {
    const store = newStore();
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 1, window: '1m' }), store, clock: () => 0 });
    const plain = 'k'.repeat(MAX_PLAIN_KEY_LENGTH);
    expect((await limiter.consume(plain)).allowed).toBe(true);
    expect((await limiter.consume(`${plain}k`)).allowed).toBe(true);
    expect((await limiter.consume(plain)).allowed).toBe(false);
  });
});

describe('the ids of idempotent charges (issue 27)', () => {
  it('count against maxKeys, one per id, at most idempotencyMaxIds per key: 100,000 distinct ids on one key hold 100', () => {
    const store = new MemoryStore({ sweepInterval: false });
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 1_000_000, window: '1h' }),
      store,
      clock: () => 1_000,
      idempotencyMaxIds: 100,
    });
    for (let i = 0; i < 100_000; i++) limiter.consumeSync('k', 1, { idempotencyKey: `id-${i}` });
    // The key's state and its 100 newest ids.
    expect(store.keyCount).toBe(101);
    expect(limiter.consumeSync('k', 1, { idempotencyKey: 'id-99999' }).remaining).toBe(900_000);
    const small = new MemoryStore({ sweepInterval: false, maxKeys: 50 });
    const tight = createLimiter({
      algorithm: fixedWindow({ limit: 1_000, window: '1h' }),
      store: small,
      clock: () => 1_000,
    });
    for (let i = 0; i < 1_000; i++) tight.consumeSync(`k${i % 10}`, 1, { idempotencyKey: `id-${i}` });
    expect(small.keyCount).toBeLessThanOrEqual(50);
  });

  it('are swept once they expire, and dropped when their key is reset', () => {
    let now = 1_000;
    const store = new MemoryStore({ sweepInterval: false });
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 100, window: '1m' }),
      store,
      clock: () => now,
      idempotencyTtl: '10s',
    });
    for (let i = 0; i < 5; i++) limiter.consumeSync('k', 1, { idempotencyKey: `id-${i}` });
    expect(store.keyCount).toBe(6);
    now += 60_000;
    store.sweep(now);
    expect(store.keyCount).toBe(0);
    limiter.consumeSync('k', 1, { idempotencyKey: 'a' });
    void limiter.reset('k');
    expect(store.keyCount).toBe(0);
  });

  it('a full store still replays: a replay adds no record and evicts nothing', () => {
    const store = new MemoryStore({ sweepInterval: false, maxKeys: 2 });
    const limiter = createLimiter({ algorithm: fixedWindow({ limit: 100, window: '1h' }), store, clock: () => 1_000 });
    limiter.consumeSync('k', 1, { idempotencyKey: 'a' });
    const remaining = [0, 1, 2].map(() => limiter.consumeSync('k', 1, { idempotencyKey: 'a' }).remaining);
    expect(remaining).toEqual([99, 99, 99]);
    expect(store.keyCount).toBeLessThanOrEqual(2);
  });
});

describe('an override and the deny cache', () => {
  it('a denial decided under an override is not cached past it: at its ttl the limit’s own algorithm decides again', async () => {
    let now = 1_000_000;
    const clock = () => now;
    const store = new MemoryStore({ clock, sweepInterval: false });
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 100, window: '1m' }),
      store,
      prefix: 'p',
      clock,
      overrides: true,
      denyCache: true,
    });
    await limiter.setOverride('k', fixedWindow({ limit: 1, window: '1h' }), { ttl: '1m' });
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    now += 2 * 60_000; // the override ended a minute ago
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, limit: 100 });
    store.close();
  });
});
