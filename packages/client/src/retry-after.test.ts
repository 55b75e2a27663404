import { describe, expect, it } from 'vitest';
import { retryAfterMs } from './retry-after.js';

const NOW = Date.UTC(2026, 9, 21, 7, 28, 0);

describe('retryAfterMs', () => {
  it.each([
    ['0', 0],
    ['120', 120_000],
    [' 5 ', 5000],
    ['2147483648', 2 ** 31 * 1000],
    ['Wed, 21 Oct 2026 07:28:30 GMT', 30_000],
    ['Wed, 21 Oct 2026 07:27:00 GMT', 0], // a date past: no wait
  ])('%j → %j ms', (value, ms) => {
    expect(retryAfterMs(value, NOW)).toBe(ms);
  });

  it('reads no date against a wall clock that gave no number', () => {
    expect(retryAfterMs('Wed, 21 Oct 2026 07:28:30 GMT', NaN)).toBeUndefined();
    expect(retryAfterMs('5', NaN)).toBe(5000);
  });

  it.each([
    null,
    '',
    '-1',
    '1.5',
    '1e3',
    '2147483649',
    '5, 7', // two fields joined by Headers
    'Wed, 21 Oct 2026 07:28:30 GMT, Wed, 21 Oct 2026 07:28:40 GMT',
    'Wednesday, 21-Oct-26 07:28:30 GMT', // the obsolete RFC 850 form
    'Wed, 21 Oct 2099 07:28:30 GMT', // past 2^31 seconds from now
    'soon',
  ])('%j is no Retry-After', (value) => {
    expect(retryAfterMs(value, NOW)).toBeUndefined();
  });
});
