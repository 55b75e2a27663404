import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../algorithm.js';
import { concurrency } from '../algorithms/concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import type { Decision } from '../decision.js';
import { StoreClosedError, StoreError } from '../errors.js';
import { createLimiter, type Limiter, type LimiterOptions } from '../limiter/index.js';
import { Composition } from './engine.js';
import { Run } from './run.js';
import { combineLimiters } from './group.js';
import { TestStore } from '../testing/test-store.js';

const clock = (): number => 1_000;

/** A run of `keys.length` limits with these keys and costs. */
function runOf(keys: string[], costs: number[]): Run {
  const run = new Run(keys.length);
  keys.forEach((key, i) => {
    run.keys[i] = key;
    run.costs[i] = costs[i]!;
  });
  return run;
}

function limiter(store: TestStore, algorithm: Algorithm, options: Partial<LimiterOptions> = {}): Limiter {
  return createLimiter({ algorithm, store, clock, timeout: false, prefix: `p${Math.random()}`, ...options });
}

/** Three limits of 10, 1 and 10 a minute on one store, and what each run settled with. */
function threeLimits(local: boolean) {
  const store = new TestStore({ answers: local ? 'sync' : 'async' });
  const [wide, narrow, last] = [10, 1, 10].map((limit) => limiter(store, fixedWindow({ limit, window: '1m' })));
  const runs: {
    deniedBy: number;
    binding: number;
    retryAfterMs: number;
    delayMs: number;
    decisions: readonly (Decision | undefined)[];
  }[] = [];
  const composition = new Composition(
    [wide!, narrow!, last!],
    ({ decisions, deniedBy, binding, retryAfterMs, delayMs }) => {
      runs.push({ deniedBy, binding, retryAfterMs, delayMs, decisions });
      return runs.length;
    },
  );
  return { store, wide: wide!, narrow: narrow!, last: last!, composition, runs };
}

/** The two ways a group runs: on local stores (answered synchronously) and on remote ones (a promise). */
const bothWays = [
  ['synchronous', true],
  ['asynchronous', false],
] as const;

describe('Composition', () => {
  it('is synchronous with synchronous limiters: no promise, and the binding limit is the one with the fewest remaining', () => {
    const { composition, runs } = threeLimits(true);
    const outcome = composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
    expect(outcome).toBe(1);
    expect(runs[0]).toMatchObject({ deniedBy: -1, binding: 1, retryAfterMs: 0, delayMs: 0 });
    expect(runs[0]!.decisions.map((d) => d!.remaining)).toEqual([9, 0, 9]);
  });

  it.each(bothWays)(
    '%s: a denial in the middle gives back what the earlier limits took and asks none after it',
    async (_label, local) => {
      const { composition, runs, wide, last } = threeLimits(local);
      await composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
      const outcome = composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
      expect(outcome instanceof Promise).toBe(!local);
      await outcome;
      expect(runs[1]).toMatchObject({ deniedBy: 1, binding: 1, delayMs: 0 });
      expect(runs[1]!.retryAfterMs).toBeGreaterThan(0);
      expect(runs[1]!.decisions[2]).toBeUndefined();
      // The wide limit's unit of the denied run was given back; the last limit was charged once.
      expect((await wide.peek('k')).remaining).toBe(9);
      expect((await last.peek('k')).remaining).toBe(9);
    },
  );

  it.each(bothWays)(
    '%s: a limiter that throws gets the earlier limits given back, then the error propagates',
    async (_label, local) => {
      const good = new TestStore({ answers: local ? 'sync' : 'async' });
      const closed = new TestStore({ answers: local ? 'sync' : 'async' });
      closed.failure = new StoreClosedError();
      const first = limiter(good, fixedWindow({ limit: 5, window: '1m' }));
      const group = combineLimiters([first, limiter(closed, fixedWindow({ limit: 5, window: '1m' }))]);
      if (local) expect(() => group.consumeSync('k')).toThrow(StoreClosedError);
      await expect(group.consume('k')).rejects.toBeInstanceOf(StoreClosedError);
      expect((await first.peek('k')).remaining).toBe(5);
    },
  );

  it('gives back nothing for a decision of the failure policy (it took nothing from the store)', async () => {
    const down = new TestStore();
    down.failure = new StoreError('down');
    const up = new TestStore();
    const failedOpen = limiter(down, fixedWindow({ limit: 5, window: '1m' }), { onStoreError: 'allow' });
    const group = combineLimiters([failedOpen, limiter(up, fixedWindow({ limit: 1, window: '1m' }))]);
    expect(group.consumeSync('k')).toMatchObject({ allowed: true, deniedBy: -1, limit: 1, remaining: 0 });
    expect(group.consumeSync('k')).toMatchObject({ allowed: false, deniedBy: 1 });
    expect(down.calls.filter((call) => call.startsWith('giveBack'))).toEqual([]);
  });

  it('binds to a limit that failed open only when every limit did', () => {
    const down = new TestStore();
    down.failure = new StoreError('down');
    const [a, b] = [7, 3].map((limit) =>
      limiter(down, fixedWindow({ limit, window: '1m' }), { onStoreError: 'allow' }),
    );
    const combined = combineLimiters([a!, b!]).consumeSync('k');
    expect(combined).toMatchObject({ allowed: true, reason: 'store-error' });
  });

  it.each(bothWays)(
    '%s: takes and releases concurrency permits; a later denial releases the permit at once',
    async (_label, local) => {
      const store = new TestStore({ answers: local ? 'sync' : 'async' });
      const permits = limiter(store, concurrency({ limit: 2, lease: '1m' }));
      const rate = limiter(store, fixedWindow({ limit: 1, window: '1m' }));
      const group = combineLimiters([permits, rate]);
      expect(group.synchronous).toBe(local);
      const admitted = await group.consume(['tenant', 'alice']);
      expect(admitted).toMatchObject({ allowed: true, deniedBy: -1 });
      expect(typeof (admitted.decisions[0] as { release?: unknown }).release).toBe('function');
      expect(store.held(`${permits.prefix}:tenant`)).toBe(1);
      const denied = await group.consume(['tenant', 'alice']);
      expect(denied).toMatchObject({ allowed: false, deniedBy: 1 });
      // The denied request's permit was released: only the admitted one is held.
      expect(store.held(`${permits.prefix}:tenant`)).toBe(1);
      await admitted.release();
      await admitted.release();
      expect(store.held(`${permits.prefix}:tenant`)).toBe(0);
    },
  );

  it('denies, by the limit that delays it, a request that would wait longer than maxDelayMs, and gives back its slot', async () => {
    const store = new TestStore();
    const shaper = limiter(store, leakyBucket({ capacity: 5, leakRate: 1, interval: '1s', mode: 'shape' }));
    const runs: [number, number, number][] = [];
    const composition = new Composition(
      [shaper],
      ({ deniedBy, retryAfterMs, delayMs }) => runs.push([deniedBy, retryAfterMs, delayMs]),
      { maxDelayMs: 1_500 },
    );
    for (let i = 0; i < 4; i++) composition.run(runOf(['k'], [1]));
    // Admitted at 0, 1 s and 1.5 s... until the wait (3 s) passes the 1.5 s bound: denied for the 1.5 s beyond it.
    expect(runs).toEqual([
      [-1, 0, 0],
      [-1, 0, 1_000],
      [0, 500, 0],
      [0, 500, 0],
    ]);
    expect((await shaper.peek('k')).delayMs).toBe(2_000);
  });
});

describe('Composition with a finite maxDelayMs: every rate limit reserves', () => {
  it('waits for the latest slot; a denial by a later limit cancels the earlier reservations (units back, one event each)', async () => {
    const store = new TestStore();
    const cancelled: string[] = [];
    const observer = {
      reservationCancelled: (e: { limit: string; cost: number }) => cancelled.push(`${e.limit} ${e.cost}`),
    };
    // 2 tokens, 1 a second; and 3 per minute.
    const bucket = limiter(store, tokenBucket({ capacity: 2, refillRate: 1 }), { name: 'bucket', observer });
    const window = limiter(store, fixedWindow({ limit: 3, window: '1m' }), { name: 'window', observer });
    const runs: [number, number, number][] = [];
    const composition = new Composition(
      [bucket, window],
      ({ deniedBy, retryAfterMs, delayMs }) => runs.push([deniedBy, retryAfterMs, delayMs]),
      { maxDelayMs: 1_000 },
    );
    for (let i = 0; i < 4; i++) composition.run(runOf(['k', 'k'], [1, 1]));
    // Two at once, the third waits for the bucket's next token (1 s); the fourth would wait 2 s: the
    // bucket denies it at once and takes nothing (the window is not asked).
    expect(runs).toEqual([
      [-1, 0, 0],
      [-1, 0, 0],
      [-1, 0, 1_000],
      [0, 1_000, 0],
    ]);
    expect(await bucket.peek('k')).toMatchObject({ remaining: 0, resetMs: 3_000 });
    expect(cancelled).toEqual([]);
    // Waiting up to 2 s, the bucket reserves; the window, full, denies: the reservation is cancelled.
    const wider = new Composition([bucket, window], ({ deniedBy }) => runs.push([deniedBy, 0, 0]), {
      maxDelayMs: 2_000,
    });
    wider.run(runOf(['k', 'k'], [1, 1]));
    expect(runs.at(-1)).toEqual([1, 0, 0]);
    expect(cancelled).toEqual(['bucket 1']);
    expect(await bucket.peek('k')).toMatchObject({ resetMs: 3_000 });
  });

  it('refuses a rate limit whose store does not run reservations', () => {
    const store = new TestStore();
    (store as { capabilities: unknown }).capabilities = { local: true, algorithms: ['fixed-window'] };
    expect(
      () => new Composition([limiter(store, fixedWindow({ limit: 1, window: '1s' }))], () => 0, { maxDelayMs: 500 }),
    ).toThrow(/reservations/);
  });
});

describe('Composition with dry-run limits', () => {
  /** Limits of 10, 1 and 10 a minute, the middle one dry-run (unless `dryRun` says otherwise). */
  function withDryRun(dryRun: boolean[] = [false, true, false], maxDelayMs = Infinity) {
    const store = new TestStore();
    const [wide, narrow, last] = [10, 1, 10].map((limit) => limiter(store, fixedWindow({ limit, window: '1m' })));
    const runs: { deniedBy: number; binding: number; retryAfterMs: number; dryRunDeniedBy: number }[] = [];
    const composition = new Composition(
      [wide!, narrow!, last!],
      ({ deniedBy, binding, retryAfterMs, dryRunDeniedBy }) => {
        runs.push({ deniedBy, binding, retryAfterMs, dryRunDeniedBy });
      },
      { maxDelayMs, dryRun },
    );
    return { composition, runs, wide: wide!, narrow: narrow!, last: last! };
  }

  it('charges a dry-run limit like any other, but its denial stops nothing and is only reported', async () => {
    const { composition, runs, wide, last } = withDryRun();
    composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
    composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
    // The dry-run limit never binds while an enforced one answers: the wide and last ones have 8 left each.
    expect(runs).toEqual([
      { deniedBy: -1, binding: 0, retryAfterMs: 0, dryRunDeniedBy: -1 },
      { deniedBy: -1, binding: 0, retryAfterMs: 59_000, dryRunDeniedBy: 1 },
    ]);
    expect((await wide.peek('k')).remaining).toBe(8);
    expect((await last.peek('k')).remaining).toBe(8);
  });

  it('an enforced denial after a dry-run one is enforced, and gives back as usual', async () => {
    const { composition, runs, wide } = withDryRun([false, true, false]);
    for (let i = 0; i < 10; i++) composition.run(runOf(['k', 'k', 'other'], [1, 1, 1]));
    composition.run(runOf(['k', 'k', 'other'], [1, 1, 1]));
    expect(runs.at(-1)).toMatchObject({ deniedBy: 0, dryRunDeniedBy: -1 });
    expect((await wide.peek('k')).remaining).toBe(0);
  });

  it('binds among the dry-run limits only when every limit is one', () => {
    const { composition, runs } = withDryRun([true, true, true]);
    composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
    composition.run(runOf(['k', 'k', 'k'], [1, 1, 1]));
    expect(runs).toEqual([
      { deniedBy: -1, binding: 1, retryAfterMs: 0, dryRunDeniedBy: -1 },
      { deniedBy: -1, binding: 1, retryAfterMs: 59_000, dryRunDeniedBy: 1 },
    ]);
  });
});
