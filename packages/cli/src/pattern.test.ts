import { describe, expect, it } from 'vitest';
import { patternLengthMs, parsePattern, patternTraffic } from './pattern.js';

/** The error `parsePattern(text)` throws (a test fails if it throws none). */
function refusal(text: string): Error {
  try {
    parsePattern(text);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`parsePattern(${JSON.stringify(text)}) threw no error`);
}

const arrivals = (pattern: string, options?: Parameters<typeof patternTraffic>[1]) =>
  patternTraffic(parsePattern(pattern), options);

describe('parsePattern: the parts of --pattern', () => {
  it.each([
    ['50/s for 60s', [{ kind: 'rate', rate: 50, unitMs: 1000, forMs: 60_000 }]],
    [
      '50/s for 60s, 600/s for 300s',
      [
        { kind: 'rate', rate: 50, forMs: 60_000 },
        { kind: 'rate', rate: 600, forMs: 300_000 },
      ],
    ],
    ['600 / s for 5m', [{ kind: 'rate', rate: 600, forMs: 300_000 }]],
    ['3/ms for 10ms', [{ kind: 'rate', rate: 3, unitMs: 1, forMs: 10 }]],
    ['120/min for 1h', [{ kind: 'rate', rate: 120, unitMs: 60_000, forMs: 3_600_000 }]],
    ['poisson 200/s for 30s', [{ kind: 'poisson', rate: 200, forMs: 30_000 }]],
    ['burst 400 at 10s', [{ kind: 'burst', count: 400, atMs: 10_000 }]],
    ['burst 100 at 0s', [{ kind: 'burst', count: 100, atMs: 0 }]],
    [
      'idle 5s, burst 3 at 1.5s',
      [
        { kind: 'idle', forMs: 5000 },
        { kind: 'burst', count: 3, atMs: 1500 },
      ],
    ],
  ])('%s', (text, parts) => {
    expect(parsePattern(text)).toMatchObject(parts);
  });

  // A part that is not one: named by its number, quoted as given.
  it.each([
    ['50/s', 1, '50/s', '"<rate> for <duration>"'],
    ['50/s for 60s, 600/x for 300s', 2, '600/x for 300s', 'a rate such as "600/s"'],
    ['50/s for 60s,, 1/s for 1s', 2, '', 'an empty one was given'],
    ['50/s for sixty', 1, '50/s for sixty', 'a duration'],
    ['0/s for 1s', 1, '0/s for 1s', 'a rate above 0'],
    ['burst 400 at', 1, 'burst 400 at', '"burst <count> at <time>"'],
    ['burst many at 10s', 1, 'burst many at 10s', 'a whole number of requests after "burst" (got "many")'],
    ['burst 4 at soon', 1, 'burst 4 at soon', 'a duration'],
    ['poisson 200/s', 1, 'poisson 200/s', '"poisson <rate> for <duration>"'],
    ['idle', 1, 'idle', '"idle <duration>"'],
  ])('%j is refused on --pattern part %i, quoting %j, saying %s', (text, part, quoted, expected) => {
    const error = refusal(text);
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: `--pattern part ${part}` });
    expect(error.message).toContain(expected);
    expect(error.message).toContain(JSON.stringify(quoted));
  });

  // A pattern whose parts are each fine, or that has none: the whole --pattern.
  it.each([
    ['', 'parts such as'],
    ['100000/ms for 1d', 'at most 50000000 arrivals'],
    ['idle 5s', 'at least one arrival'],
  ])('%j is refused on --pattern, saying %s', (text, expected) => {
    const error = refusal(text);
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: '--pattern' });
    expect(error.message).toContain(expected);
  });
});

describe('patternTraffic: the arrivals of a pattern', () => {
  it('evenly spaced parts follow one another; the first arrival of a part is at its start', () => {
    const t = arrivals('50/s for 100ms, 100/s for 50ms');
    expect([...t.times]).toEqual([0, 20, 40, 60, 80, 100, 110, 120, 130, 140]);
    expect(patternLengthMs(parsePattern('50/s for 100ms, 100/s for 50ms'))).toBe(150);
  });

  it("a part's times come from its index, not a running sum: 600/s for 300s ends exactly", () => {
    const t = arrivals('600/s for 300s');
    expect(t.times.length).toBe(180_000);
    expect(t.times[600]).toBe(1000);
    expect(t.times[179_999]).toBeCloseTo(299_998.333, 3);
  });

  it('bursts land at their time among the sequential parts, in order, and do not move the sequence', () => {
    const t = arrivals('10/s for 1s, burst 3 at 250ms, 10/s for 1s');
    expect([...t.times].slice(0, 6)).toEqual([0, 100, 200, 250, 250, 250]);
    expect(t.times.length).toBe(23);
    expect(t.times[22]).toBe(1900);
  });

  it("the README's two batches", () => {
    expect([...arrivals('burst 2 at 990ms, burst 2 at 1010ms').times]).toEqual([990, 990, 1010, 1010]);
  });

  it('--keys n spreads arrivals round-robin, each key seeing 1/n; one key is named "key"', () => {
    const t = arrivals('100/s for 1s', { keys: 4 });
    expect(t.keys).toEqual(['key-0', 'key-1', 'key-2', 'key-3']);
    expect([...t.keyIndex].slice(0, 6)).toEqual([0, 1, 2, 3, 0, 1]);
    expect(arrivals('1/s for 1s').keys).toEqual(['key']);
  });

  it('--cost sets every cost; unitCosts says whether all are 1', () => {
    expect(arrivals('10/s for 1s', { cost: 2.5 })).toMatchObject({ unitCosts: false });
    expect([...arrivals('10/s for 1s', { cost: 2.5 }).costs].every((c) => c === 2.5)).toBe(true);
    expect(arrivals('10/s for 1s').unitCosts).toBe(true);
  });

  it('poisson: reproducible for a seed, different for another, about the rate, within the part', () => {
    const a = arrivals('poisson 1000/s for 10s', { seed: 7 });
    const b = arrivals('poisson 1000/s for 10s', { seed: 7 });
    const c = arrivals('poisson 1000/s for 10s', { seed: 8 });
    expect([...a.times]).toEqual([...b.times]);
    expect([...a.times]).not.toEqual([...c.times]);
    // 10,000 expected; the standard deviation is 100.
    expect(a.times.length).toBeGreaterThan(9500);
    expect(a.times.length).toBeLessThan(10500);
    expect(a.times[0]).toBeGreaterThanOrEqual(0);
    expect(a.times[a.times.length - 1]).toBeLessThan(10_000);
    for (let i = 1; i < a.times.length; i++) expect(a.times[i]).toBeGreaterThanOrEqual(a.times[i - 1]!);
  });
});
