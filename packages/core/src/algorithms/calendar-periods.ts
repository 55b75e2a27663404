import { InvalidOptionError } from '../errors.js';

/** The calendar periods a `calendarWindow` counts in. */
export const CALENDAR_PERIODS = ['hour', 'day', 'week', 'month', 'year'] as const;
export type CalendarPeriod = (typeof CALENDAR_PERIODS)[number];

/** The days a week may start on, Sunday first (as `Date.prototype.getDay` numbers them). */
export const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The shortest and the longest a period can last, in ms, in any zone of the time zone database since
 * 1850: clocks have moved by up to a day at once (Pacific/Apia skipped 2011-12-30: a 6-day week, a
 * 364-day year; Pacific/Kwajalein repeated one: a 48-hour day), and Antarctica/Casey went from +08 to
 * +11 at 00:01 (a local hour of one minute, one of four, days of 21 and 27 hours). A skipped local
 * period (a day Apia skipped) has no instants and is no period.
 */
export const PERIOD_SPAN: Readonly<Record<CalendarPeriod, { readonly shortest: number; readonly longest: number }>> = {
  hour: { shortest: 60_000, longest: 4 * HOUR },
  day: { shortest: DAY - 3 * HOUR, longest: 2 * DAY },
  week: { shortest: 6 * DAY, longest: 8 * DAY },
  month: { shortest: 27 * DAY, longest: 32 * DAY },
  year: { shortest: 364 * DAY, longest: 367 * DAY },
};

/**
 * The periods of a calendar in one time zone, as instants (ms since the epoch, UTC): a period begins
 * at the first instant whose local time is at or after its local start (00:00 of the 1st for a
 * month), so periods are contiguous and never overlap. A day is 23 or 25 hours long on the days the
 * clocks change; a local start that does not exist (skipped by a transition) begins at the
 * transition; on the night the clocks go back, the repeated local hour belongs to the period it first
 * began (a 2-hour "hour", as the 25-hour day). A local period skipped whole (an hour in a 1-hour
 * gap) has no instants and is not a period.
 */
export class CalendarPeriods {
  readonly timeZone: string;
  private readonly format: Intl.DateTimeFormat;
  /** Recent periods, `[start, end]` pairs: decisions fall in the current period almost always. */
  private readonly recent: number[] = [];

  constructor(
    readonly period: CalendarPeriod,
    timeZone: string,
    /** The day a week starts, as `getDay()` numbers it (0 Sunday). */
    readonly weekStart: number,
  ) {
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      ...{
        era: 'short',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      },
    });
    this.timeZone = this.format.resolvedOptions().timeZone;
  }

  /** The start of the period that holds `t`. */
  startOf(t: number): number {
    const recent = this.recent;
    for (let i = 0; i < recent.length; i += 2) if (recent[i]! <= t && t < recent[i + 1]!) return recent[i]!;
    let start = this.firstAtOrAfter(this.labelStart(this.wall(t)));
    // On a night the clocks go back, `t`'s local time may be back in the period before the one that began.
    for (let next = this.after(start); next <= t; next = this.after(start)) start = next;
    return start;
  }

  /** The start of the period after the one that starts at `start` (a value {@link startOf} returned). */
  endOf(start: number): number {
    const recent = this.recent;
    for (let i = 0; i < recent.length; i += 2) if (recent[i] === start) return recent[i + 1]!;
    return this.after(start);
  }

  private after(start: number): number {
    let label = this.labelStart(this.wall(start));
    let end: number;
    // A local period skipped whole begins where the next one does: it is no period.
    do {
      label = this.nextLabel(label);
      end = this.firstAtOrAfter(label);
    } while (end <= start);
    this.remember(start, end);
    return end;
  }

  private remember(start: number, end: number): void {
    if (this.recent.length >= 16) this.recent.splice(0, 2);
    this.recent.push(start, end);
  }

  /** The local wall time at `t`, as ms of a UTC clock that shows it. */
  private wall(t: number): number {
    const second = Math.floor(t / 1000) * 1000;
    let y = 0,
      mo = 0,
      d = 0,
      h = 0,
      mi = 0,
      s = 0,
      bc = false;
    for (const part of this.format.formatToParts(second)) {
      const v = Number(part.value);
      switch (part.type) {
        case 'era':
          bc = part.value === 'BC';
          break;
        case 'year':
          y = v;
          break;
        case 'month':
          mo = v;
          break;
        case 'day':
          d = v;
          break;
        case 'hour':
          h = v;
          break;
        case 'minute':
          mi = v;
          break;
        case 'second':
          s = v;
          break;
      }
    }
    const wall = new Date(0);
    // 1 BC is year 0 of the proleptic calendar Date counts in.
    wall.setUTCFullYear(bc ? 1 - y : y, mo - 1, d);
    wall.setUTCHours(h, mi, s, 0);
    return wall.getTime() + (t - second);
  }

  /** The wall time at which the local period holding wall time `w` starts. */
  private labelStart(w: number): number {
    // `Date` truncates a fractional time toward 0: before 1970 that is the next ms, maybe the next day.
    const date = new Date(Math.floor(w));
    switch (this.period) {
      case 'hour':
        return Math.floor(w / HOUR) * HOUR;
      case 'day':
        return Math.floor(w / DAY) * DAY;
      case 'week':
        return Math.floor(w / DAY) * DAY - ((date.getUTCDay() - this.weekStart + 7) % 7) * DAY;
      case 'month':
        return monthStart(date.getUTCFullYear(), date.getUTCMonth());
      case 'year':
        return monthStart(date.getUTCFullYear(), 0);
    }
  }

  /** The wall time at which the local period after the one starting at wall time `w` starts. */
  private nextLabel(w: number): number {
    const date = new Date(Math.floor(w));
    switch (this.period) {
      case 'hour':
        return w + HOUR;
      case 'day':
      case 'week': {
        // Calendar days: a wall clock has no transitions.
        const next = new Date(w);
        next.setUTCDate(date.getUTCDate() + (this.period === 'day' ? 1 : 7));
        return next.getTime();
      }
      case 'month':
        return monthStart(date.getUTCFullYear(), date.getUTCMonth() + 1);
      case 'year':
        return monthStart(date.getUTCFullYear() + 1, 0);
    }
  }

  /** The first instant whose local time is at or after wall time `w`. */
  private firstAtOrAfter(w: number): number {
    // The offsets in force around `w` (a transition is never closer than a day to another).
    let best = Infinity;
    for (const probe of [w - DAY, w, w + DAY]) {
      const t = w - (this.wall(probe) - probe);
      if (t < best && this.wall(t) === w) best = t;
    }
    if (best !== Infinity) return best;
    // `w` was skipped (clocks went forward over it): the period begins at the transition, the first
    // second whose local time is past `w`.
    let lo = Math.floor((w - 3 * DAY) / 1000);
    let hi = Math.ceil((w + DAY) / 1000);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.wall(mid * 1000) >= w) hi = mid;
      else lo = mid;
    }
    return hi * 1000;
  }
}

/** The 1st of `month` (0-based; 12 is January of the next year) of `year` at 00:00, as a UTC wall time (years 0–99 included, which `Date.UTC` would shift to 1900–1999). */
function monthStart(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 1);
  return date.getTime();
}

/** The periods of `period` in `timeZone` (`owner` names the factory in errors). A zone the runtime does not know is an `InvalidOptionError`. */
export function calendarPeriods(
  period: unknown,
  timeZone: unknown,
  weekStart: unknown,
  owner: string,
): CalendarPeriods {
  if (typeof period !== 'string' || !(CALENDAR_PERIODS as readonly string[]).includes(period)) {
    throw new InvalidOptionError(
      `${owner}.period`,
      period,
      `one of ${CALENDAR_PERIODS.map((p) => `'${p}'`).join(', ')}`,
    );
  }
  if (typeof timeZone !== 'string' || timeZone === '') {
    throw new InvalidOptionError(
      `${owner}.timeZone`,
      timeZone,
      "an IANA time zone name such as 'Europe/Paris' or 'UTC'",
    );
  }
  const start = weekdayNumber(weekStart, `${owner}.weekStart`);
  if (weekStart !== undefined && period !== 'week')
    throw new InvalidOptionError(`${owner}.weekStart`, weekStart, "no weekStart unless period is 'week'");
  try {
    return new CalendarPeriods(period as CalendarPeriod, timeZone, start);
  } catch (error) {
    if (error instanceof RangeError) {
      throw new InvalidOptionError(
        `${owner}.timeZone`,
        timeZone,
        "an IANA time zone this runtime knows, such as 'Europe/Paris', 'America/New_York' or 'UTC' (Intl.supportedValuesOf('timeZone') lists them)",
      );
    }
    throw error;
  }
}

/** A week's first day as `getDay()` numbers it: a name (`'monday'`, the default, as ISO 8601), or 0 (Sunday) to 6. */
function weekdayNumber(value: unknown, field: string): number {
  if (value === undefined) return 1;
  if (typeof value === 'string' && (WEEKDAYS as readonly string[]).includes(value.toLowerCase()))
    return WEEKDAYS.indexOf(value.toLowerCase() as Weekday);
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 6) return value;
  throw new InvalidOptionError(field, value, "a day name ('monday' … 'sunday') or a number from 0 (Sunday) to 6");
}
