/**
 * A configuration's numbers reach Lua as `String(value)`: inline as a number literal of the script
 * text, by argument through `tonumber(ARGV[i])`. Both must read back as the very double JS holds
 * (compared as the bytes of a float64), for any finite double and for those the algorithms derive
 * (rates per ms such as 1/3 or 1e-12, huge limits, windows of fractional ms). Real Redis, standalone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useRedis } from '@rl/test-support';

const redis = useRedis('number-text');

/** The float64 bytes of `tonumber(ARGV[1])` and of the literal `text` as Redis's Lua reads them. */
async function luaDoubles(text: string): Promise<[string, string]> {
  // The literal in the text as the store writes it (`local X = <text>`); one script per value, flushed after.
  const script = `local LITERAL = ${text}\nreturn struct.pack('<d', tonumber(ARGV[1])) .. struct.pack('<d', LITERAL)`;
  const reply = (await redis.client.callBuffer('EVAL', script, 0, text)) as Buffer;
  return [reply.subarray(0, 8).toString('hex'), reply.subarray(8, 16).toString('hex')];
}

function doubleBytes(value: number): string {
  const buffer = Buffer.alloc(8);
  buffer.writeDoubleLE(value);
  return buffer.toString('hex');
}

/** Doubles the algorithms produce from their options: a count over a duration, a limit, a window. */
const derived = fc.oneof(
  fc.constantFrom(
    1 / 3,
    1e-12,
    999_999_999_999_999,
    0.1 / 1000,
    1 / 60_000,
    2 / 3000,
    1 / 86_400_000,
    1234.5,
    2 ** 53 + 2,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    2.2250738585072014e-308,
  ),
  fc
    .tuple(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 86_400_000 }))
    .map(([count, ms]) => count / ms),
  fc
    .tuple(fc.double({ min: 1e-9, max: 1e9, noNaN: true }), fc.constantFrom(1000, 60_000, 3_600_000, 86_400_000))
    .map(([perInterval, ms]) => perInterval / ms),
);
/** Any finite double but -0 (see below). */
const anyDouble = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Object.is(x, -0));

describe('numbers as text, read by Lua', () => {
  it('String(value) reads back as the same double, by tonumber (by argument) and as a literal (inline)', async () => {
    try {
      await fc.assert(
        fc.asyncProperty(fc.oneof(derived, anyDouble), async (value) => {
          const text = String(value);
          expect(await luaDoubles(text)).toEqual([doubleBytes(value), doubleBytes(value)]);
        }),
        { numRuns: 300 },
      );
    } finally {
      await redis.client.script('FLUSH');
    }
  });

  it('-0 is read as 0 both ways (String(-0) is "0"): the two ways still agree', async () => {
    expect(String(-0)).toBe('0');
    expect(await luaDoubles(String(-0))).toEqual([doubleBytes(0), doubleBytes(0)]);
  });
});
