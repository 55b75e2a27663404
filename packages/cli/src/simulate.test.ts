import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseLimit } from './limits.js';
import { parsePattern, patternTraffic } from './pattern.js';
import { simulate } from './simulate.js';

const run = (pattern: string, limits: string[], options: Parameters<typeof simulate>[2] = {}) =>
  simulate(patternTraffic(parsePattern(pattern)), limits.map(parseLimit), options);

/** The rows of the root README's "Choosing an algorithm" table: the call, and the first number of each batch's cell. */
function readmeRows(): { call: string; first: number; second: number | undefined; secondAt: number }[] {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Choosing an algorithm'), readme.indexOf('Conventions, exactly:'));
  return section
    .split('\n')
    .filter((line) => /^\| `[a-zA-Z]+\(\{/.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .filter((cells) => !cells[1]!.startsWith('`concurrency'))
    .map((cells) => {
      // `fixedWindow({ limit: 100, window: '1s' })` (meter, GCRA) → fixedWindow(limit=100,window='1s')
      const source = /^`([a-zA-Z]+)\(\{ (.*) \}\)`/.exec(cells[1]!)!;
      const call = `${source[1]}(${source[2]!.replace(/: /g, '=').replace(/, /g, ',')})`;
      // The sliding counter's second cell is "(at 1.200 s: exactly 20)": its second batch comes at 1.200 s.
      const later = /at (\d+\.\d+) s: exactly (\d+)/.exec(cells[3]!);
      return {
        call,
        first: Number(/^\d+/.exec(cells[2]!)![0]),
        second: later ? Number(later[2]) : Number(/^\d+/.exec(cells[3]!)![0]),
        secondAt: later ? Math.round(Number(later[1]) * 1000) : 1010,
      };
    });
}

describe("simulate: the README's table (100 requests at 0.990 s, 100 at 1.010 s)", () => {
  const rows = readmeRows();

  it('reads every rate algorithm row of the README table', () => {
    expect(rows.map((r) => r.call.slice(0, r.call.indexOf('(')))).toEqual([
      'fixedWindow',
      'calendarWindow',
      'slidingWindowLog',
      'slidingWindowCounter',
      'tokenBucket',
      'leakyBucket',
      'leakyBucket',
    ]);
  });

  it.each(rows.map((r) => [r.call, r] as const))(
    "%s: the admitted counts of both batches are the README's",
    (_, row) => {
      const report = run(`burst 100 at 990ms, burst 100 at ${row.secondAt}ms`, [row.call], { sliceMs: 10 });
      const l = report.limits[0]!;
      expect(report.startMs).toBe(990);
      expect([l.slices.admitted[0], l.slices.admitted.at(-1)]).toEqual([row.first, row.second]);
      expect(l.admitted + l.denied).toBe(200);
    },
  );

  it('the shaper: delays 0, 10, …, 190 ms for the first batch, 180 and 190 ms for the second', () => {
    const report = run(
      'burst 100 at 990ms, burst 100 at 1010ms',
      ['leakyBucket(capacity=20,leakRate=100,mode=shape)'],
      { sliceMs: 10 },
    );
    expect(report.limits[0]).toMatchObject({ admitted: 22, delayed: 21, delayMs: { p50: 100, max: 190 }, waitMs: 200 });
    // What proceeds: one every 10 ms from 0.990 s to 1.200 s.
    expect(report.limits[0]!.maxInWindow).toMatchObject({ allKeys: 22, perKey: 22 });
  });
});

describe('simulate: waiting, windows, keys', () => {
  it('--wait bounds the hold as the middleware does (a shaper, a reserving bucket): a longer delay is denied and its place given back', () => {
    const [shaper, bucket] = run(
      'burst 100 at 0s',
      ['leakyBucket(capacity=20,leakRate=100,mode=shape)', 'tokenBucket(capacity=20,refillRate=100)'],
      { waitMs: 100 },
    ).limits;
    // Delays 0, 10, …, 100 ms pass; the 12th (110 ms) and later are denied.
    expect(shaper).toMatchObject({ admitted: 11, denied: 89, delayed: 10, delayMs: { max: 100 }, waitMs: 100 });
    // A token bucket reserves: its 20 tokens at once, then one every 10 ms up to 100 ms (tokens below 0).
    expect(bucket).toMatchObject({ admitted: 30, delayed: 10, delayMs: { max: 100 }, waitMs: 100 });
  });

  it("largest admitted in any window: the fixed window's boundary burst, against the sliding log's exact bound", () => {
    const report = run(
      'burst 100 at 990ms, burst 100 at 1010ms',
      ['fixedWindow(limit=100,window=1s)', 'slidingWindowLog(limit=100,window=1s)'],
      { windowMs: 1000 },
    );
    expect(report.limits.map((l) => l.maxInWindow)).toEqual([
      { windowMs: 1000, allKeys: 200, perKey: 200, boundPerKey: 200 },
      { windowMs: 1000, allKeys: 100, perKey: 100, boundPerKey: 100 },
    ]);
  });

  it('each key has its own state: 4 keys admit 4 bursts; the busiest key is reported beside the total', () => {
    const traffic = patternTraffic(parsePattern('burst 40 at 0s'), { keys: 4 });
    const [l] = simulate(traffic, [parseLimit('tokenBucket(capacity=5,refillRate=1)')]).limits;
    expect(l).toMatchObject({ admitted: 20, denied: 20, maxInWindow: { allKeys: 20, perKey: 5, boundPerKey: 6 } });
  });

  it('costs are charged: 10 arrivals of 2.5 units fill a bucket of 10 after 4', () => {
    const traffic = patternTraffic(parsePattern('burst 10 at 0s'), { cost: 2.5 });
    expect(simulate(traffic, [parseLimit('tokenBucket(capacity=10,refillRate=1)')]).limits[0]).toMatchObject({
      admitted: 4,
      admittedUnits: 10,
    });
  });

  it('largest admitted in any window counts units, as the bound does: half-unit requests under a sliding log of 1', () => {
    const traffic = patternTraffic(parsePattern('burst 10 at 900ms, burst 10 at 1100ms'), { cost: 0.5 });
    const report = simulate(traffic, [parseLimit('slidingWindowLog(limit=1,window=1s)')], { windowMs: 1000 });
    expect(report.limits[0]!.maxInWindow).toEqual({ windowMs: 1000, allKeys: 1, perKey: 1, boundPerKey: 1 });
  });

  it('a concurrency limit is refused: replayed arrivals do not say how long each runs', () => {
    expect(() => run('burst 1 at 0s', ['concurrency(limit=5)'])).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: '--limit' }),
    );
  });

  it('reports progress every 65,536 arrivals and at the end of each limit', () => {
    const calls: [number, number, number][] = [];
    run('1000/s for 140s', ['fixedWindow(limit=10,window=1s)', 'tokenBucket(capacity=10,refillRate=10)'], {
      onProgress: (...a) => calls.push(a),
    });
    expect(calls).toEqual([
      [0, 65_536, 140_000],
      [0, 131_072, 140_000],
      [0, 140_000, 140_000],
      [1, 65_536, 140_000],
      [1, 131_072, 140_000],
      [1, 140_000, 140_000],
    ]);
  });
});
