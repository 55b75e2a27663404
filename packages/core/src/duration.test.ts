import { describe, expect, it } from 'vitest';
import { formatDuration, MAX_TIMER_MS, parseDuration, parseTimerDuration } from './duration.js';
import { InvalidOptionError } from './errors.js';

describe('parseDuration', () => {
  it.each([
    [250, 250],
    ['250ms', 250],
    ['1s', 1000],
    ['1.5s', 1500],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    [' 2 s ', 2000],
  ])('%j is %d ms', (input, ms) => {
    expect(parseDuration(input, 'x.window')).toBe(ms);
  });

  it.each([0, -1, Number.NaN, Infinity, '0s', '1w', '1 sec', 's', '', '-1s', null, {}, '1e3ms'])(
    'rejects %j naming the field and the value',
    (input) => {
      let error: unknown;
      try {
        parseDuration(input, 'fixedWindow.window');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'fixedWindow.window' });
      expect((error as Error).message).toContain('fixedWindow.window');
    },
  );
});

describe('parseTimerDuration', () => {
  it('accepts what a Node timer can wait, up to 2^31 - 1 ms', () => {
    expect(parseTimerDuration('24d', 'o')).toBe(24 * 86_400_000);
    expect(parseTimerDuration(MAX_TIMER_MS, 'o')).toBe(MAX_TIMER_MS);
  });

  it.each(['25d', '30d', MAX_TIMER_MS + 1])('rejects %s, which Node would fire after 1 ms', (value) => {
    expect(() => parseTimerDuration(value, 'x.interval')).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'x.interval' }),
    );
  });
});

describe('formatDuration', () => {
  it.each([
    [1000, '1s'],
    [60_000, '1m'],
    [3_600_000, '1h'],
    [86_400_000, '1d'],
    [1500, '1500ms'],
    [90_000, '90s'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
