import { describe, expect, it } from 'vitest';
import { reportTable } from './report.js';
import { DEFAULT_WIDTH, outputWidth, table } from './table.js';

/** The header of a report on windows of 1 s (its rows are below): the columns the table lays out. */
const { header } = reportTable({
  requests: 0,
  keys: 3,
  startMs: 0,
  endMs: 0,
  sliceMs: 1000,
  windowMs: 1000,
  limits: [],
});
const rows = [
  [
    'tokenBucket(capacity=400,refillRate=200)',
    '900 (100.0%)',
    '0 (0.0%)',
    '0',
    '0 ms / 0 ms / 0 ms / 0 ms',
    '450 (busiest key 150)',
    '600',
    'up to 1000 ms',
  ],
  [
    'leakyBucket(capacity=100,leakRate=200,mode=shape)',
    '900 (100.0%)',
    '0 (0.0%)',
    '434',
    '0 ms / 595 ms / 650 ms / 665 ms',
    '450 (busiest key 150)',
    '201',
    'up to 1000 ms',
  ],
];

describe('the report table fits the width it is given', () => {
  it('one table when it fits: labels first, numbers right-aligned', () => {
    const lines = table(header, rows, 200);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^limit {2,}admitted/);
    expect(lines[3]).toMatch(
      /^leakyBucket\(capacity=100,leakRate=200,mode=shape\) {2}900 \(100\.0%\) {2}0 \(0\.0%\) +434 /,
    );
  });

  it.each([100, 80, 60])(
    'within %i columns: the limits numbered and listed, the columns in tables under the numbers, no cell cut',
    (width) => {
      const lines = table(header, rows, width);
      for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(width);
      expect(lines.slice(0, 2)).toEqual([
        '#1  tokenBucket(capacity=400,refillRate=200)',
        '#2  leakyBucket(capacity=100,leakRate=200,mode=shape)',
      ]);
      const text = lines.join('\n');
      for (const cell of [...header.slice(1), ...rows.flatMap((r) => r.slice(1))]) expect(text).toContain(cell);
      // Every column once, in order, each group of columns a table whose rows are #1 and #2.
      const headers = lines.filter((l) => l.startsWith('# '));
      expect(headers.flatMap((h) => h.split(/ {2,}/).slice(1))).toEqual(header.slice(1));
      expect(lines.filter((l) => l.startsWith('#2 ')).length).toBe(1 + headers.length); // its legend line, then a row per table
    },
  );

  it('the exact layout at 100 columns', () => {
    expect(table(header, rows, 100)).toEqual([
      '#1  tokenBucket(capacity=400,refillRate=200)',
      '#2  leakyBucket(capacity=100,leakRate=200,mode=shape)',
      '',
      '#       admitted    denied  delayed      delay p50 / p95 / p99 / max          max in any 1s',
      '--  ------------  --------  -------  -------------------------------  ---------------------',
      '#1  900 (100.0%)  0 (0.0%)        0        0 ms / 0 ms / 0 ms / 0 ms  450 (busiest key 150)',
      '#2  900 (100.0%)  0 (0.0%)      434  0 ms / 595 ms / 650 ms / 665 ms  450 (busiest key 150)',
      '',
      '#   bound per key in 1s  wait',
      '--  -------------------  -------------',
      '#1                  600  up to 1000 ms',
      '#2                  201  up to 1000 ms',
    ]);
  });

  it("the terminal's width when stdout is one, else 100", () => {
    expect(outputWidth({ isTTY: true, columns: 132 })).toBe(132);
    expect(outputWidth({ isTTY: false, columns: 132 })).toBe(DEFAULT_WIDTH);
    expect(outputWidth({})).toBe(100);
    expect(outputWidth({ isTTY: true, columns: 10 })).toBe(100);
  });
});
