import { describe, expect, it } from 'vitest';
import { calendarMs, isoTimeMs, type CalendarFields } from './calendar-time.js';

describe('isoTimeMs: an ISO 8601 date, the same on every machine', () => {
  it.each([
    ['2026-03-29T00:30:00Z', Date.UTC(2026, 2, 29, 0, 30)],
    ['2026-03-29T00:30:00', Date.UTC(2026, 2, 29, 0, 30)], // no zone: UTC, whatever TZ says
    ['2026-03-29 00:30', Date.UTC(2026, 2, 29, 0, 30)],
    ['2026-03-29', Date.UTC(2026, 2, 29)],
    ['2026-08-07T10:00:00.990Z', Date.UTC(2026, 7, 7, 10, 0, 0, 990)],
    ['2026-08-07T12:00:00+02:00', Date.UTC(2026, 7, 7, 10)],
    ['2026-08-07T05:30:00-0430', Date.UTC(2026, 7, 7, 10)],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['0050-01-01T00:00:00Z', -60589296000000], // year 50, not 1950
  ])('%s', (text, expected) => {
    expect(isoTimeMs(text)).toBe(expected);
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2025-02-29',
    '2026-13-01',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+01:60',
    'Sun Mar 29 2026',
    '29/03/2026',
    '',
  ])('%s: not a time (NaN)', (text) => {
    expect(isoTimeMs(text)).toBeNaN();
  });
});

describe('calendarMs: fields in their ranges, or NaN', () => {
  const at: CalendarFields = {
    year: 2000,
    month: 10,
    day: 10,
    hour: 13,
    minute: 55,
    second: 36,
    offset: { sign: -1, hours: 7, minutes: 0 },
  };
  it('an access log time: [10/Oct/2000:13:55:36 -0700]', () => {
    expect(calendarMs(at)).toBe(Date.UTC(2000, 9, 10, 20, 55, 36));
  });
  it.each<Partial<CalendarFields>>([
    { day: 31, month: 2 },
    { hour: 25 },
    { minute: 61 },
    { second: 61 },
    { offset: { sign: 1, hours: 24, minutes: 0 } },
    { offset: { sign: -1, hours: 1, minutes: 60 } },
  ])('%j: NaN', (change) => {
    expect(calendarMs({ ...at, ...change })).toBeNaN();
  });
});
