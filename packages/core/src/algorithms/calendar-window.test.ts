import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../errors.js';
import { describeKindScenarios } from '../testing/conformance/tables.js';
import { runSteps } from '../testing/step-table.js';
import { calendarPeriods } from './calendar-periods.js';
import { calendarWindow } from './calendar-window.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const utc = (iso: string): number => Date.parse(`${iso}Z`);

describe('calendarWindow: at most `limit` units in each calendar period of a time zone', () => {
  it('a month resets at midnight of the 1st, whatever its length; `w` is the length of the current month', () => {
    const algorithm = calendarWindow({ limit: 1000, period: 'month' });
    runSteps(algorithm, [
      {
        at: utc('2026-12-02T10:00:00'),
        last: { allowed: true, remaining: 999, resetMs: utc('2027-01-01T00:00:00') - utc('2026-12-02T10:00:00') },
        expiresAt: utc('2027-01-01T00:00:00'),
      },
      {
        at: utc('2027-01-01T00:00:00'),
        last: { allowed: true, remaining: 999 },
        expiresAt: utc('2027-02-01T00:00:00'),
      },
    ]);
    expect(algorithm.policyAt!(utc('2027-02-10T00:00:00')).windowSeconds).toBe((28 * DAY) / 1000);
    expect(algorithm.policyAt!(utc('2028-02-10T00:00:00')).windowSeconds).toBe((29 * DAY) / 1000);
    expect(algorithm.policy.name).toBe('1000-per-month');
  });

  it('a day in Europe/Paris is 23 hours when the clocks go forward and 25 when they go back', () => {
    const algorithm = calendarWindow({ limit: 1, period: 'day', timeZone: 'Europe/Paris' });
    expect(algorithm.policyAt!(utc('2026-03-29T12:00:00')).windowSeconds).toBe((23 * HOUR) / 1000);
    expect(algorithm.policyAt!(utc('2026-10-25T12:00:00')).windowSeconds).toBe((25 * HOUR) / 1000);
    expect(algorithm.policyAt!(utc('2026-12-02T12:00:00')).windowSeconds).toBe(DAY / 1000);
  });

  it('a reservation goes at most into the next period, however short the periods (Antarctica/Casey, 2016-10-22: a 21-hour day)', () => {
    const algorithm = calendarWindow({ limit: 1, period: 'day', timeZone: 'Antarctica/Casey' });
    const at = utc('2016-10-21T15:30:00');
    const state = [0, 0];
    expect(algorithm.step(state, 0, true, { now: at, cost: 1, commit: true }).allowed).toBe(true);
    expect(
      algorithm.step(state, 0, false, { now: at, cost: 1, commit: true, maxDelay: algorithm.maxReserveMs }),
    ).toMatchObject({ allowed: true, delayMs: utc('2016-10-21T16:00:00') - at });
    // The next period is full too: no slot two periods ahead, though one would be within maxDelay.
    expect(
      algorithm.step(state, 0, false, { now: at, cost: 1, commit: true, maxDelay: algorithm.maxReserveMs }).allowed,
    ).toBe(false);
  });

  it('times the limiter accepts: years 0–99 and before 1 AD, and fractional times before 1970, fall in their own period', () => {
    for (const [period, zone, t] of [
      ['month', 'UTC', Date.UTC(2000, 5, 15) - 1950 * 365.2425 * DAY],
      ['year', 'UTC', -62_167_219_200_000 + 0.5],
      ['month', 'UTC', -0.5],
      ['month', 'America/New_York', 17_999_999.5],
      ['week', 'UTC', Date.UTC(1969, 11, 29) - 0.5],
    ] as const) {
      const p = calendarPeriods(period, zone, undefined, 'calendarWindow');
      const start = p.startOf(t);
      expect(start, `${period} ${zone} ${t}`).toBeLessThanOrEqual(t);
      expect(p.endOf(start), `${period} ${zone} ${t}`).toBeGreaterThan(t);
      expect(p.endOf(start) - start, `${period} ${zone} ${t}`).toBeGreaterThan(DAY);
    }
  });

  it('describes itself with its zone; boundInSpan counts the periods a span meets', () => {
    const algorithm = calendarWindow({ limit: 10, period: 'week', timeZone: 'Asia/Tokyo', weekStart: 'sunday' });
    expect(algorithm.describe()).toBe(
      'each calendar week from sunday in Asia/Tokyo admits at most 10; up to 20 around a boundary',
    );
    expect(algorithm.options).toEqual({
      limit: 10,
      period: 'week',
      timeZone: 'Asia/Tokyo',
      weekStart: 'sunday',
      countDenied: false,
    });
    expect(algorithm.boundInSpan(1)).toBe(20);
  });

  it.each([
    [{ limit: 1, period: 'day', timeZone: 'Mars/Olympus_Mons' }, 'calendarWindow.timeZone'],
    [{ limit: 1, period: 'day', timeZone: '' }, 'calendarWindow.timeZone'],
    [{ limit: 1, period: 'day', timeZone: null }, 'calendarWindow.timeZone'],
    [{ limit: 1, period: 'fortnight' }, 'calendarWindow.period'],
    [{ limit: 1, period: 'week', weekStart: 7 }, 'calendarWindow.weekStart'],
    [{ limit: 1, period: 'day', weekStart: 'monday' }, 'calendarWindow.weekStart'],
    [{ limit: 0, period: 'day' }, 'calendarWindow.limit'],
    [{ limit: 1, period: 'day', window: '1d' }, 'calendarWindow.window'],
  ])('%o is a typed error at creation naming %s', (options, field) => {
    const error = (() => {
      try {
        calendarWindow(options as never);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).field).toBe(field);
  });

  const zones = [
    'UTC',
    'Europe/Paris',
    'America/St_Johns',
    'Australia/Lord_Howe',
    'America/Santiago',
    'Antarctica/Troll',
    'Antarctica/Casey',
    'Asia/Kathmandu',
    'Pacific/Apia',
    'Pacific/Kwajalein',
  ];
  const periods = ['hour', 'day', 'week', 'month', 'year'] as const;

  it('property: periods are contiguous and never overlap, so no request is counted in two periods', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.constantFrom(...periods),
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        fc.integer({ min: 1, max: 40 * DAY }),
        (zone, period, t, dt) => {
          const p = calendarPeriods(period, zone, undefined, 'calendarWindow');
          const start = p.startOf(t);
          const end = p.endOf(start);
          expect(start).toBeLessThanOrEqual(t);
          expect(end).toBeGreaterThan(t);
          // The next period starts where this one ends, and a later instant never falls in an earlier period.
          expect(p.startOf(end)).toBe(end);
          expect(p.startOf(end - 1)).toBe(start);
          expect(p.startOf(t + dt)).toBeGreaterThanOrEqual(start);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describeKindScenarios('calendar-window');
