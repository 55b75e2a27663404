/**
 * Times of a traffic file read strictly and the same on every machine: an ISO 8601 date, and the
 * fields of an access log's time. `Date.parse` reads a date-time without a zone in the machine's own
 * zone (one file, two results on two hosts), rolls impossible dates over (`2026-02-30` is 2 March) and
 * takes other formats (`Sun Mar 29 2026`); `Date.UTC` rolls fields over too (`25:61:61`).
 */

/** An ISO 8601 date, or date and time (`T` or a space between), with an optional fraction and zone. */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** The fields of a calendar time, each as written: month 1–12; the zone's offset east of UTC, its sign (1 or -1), hours and minutes. */
export interface CalendarFields {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  readonly offset: { readonly sign: 1 | -1; readonly hours: number; readonly minutes: number };
}

/** The offset of UTC itself. */
const UTC_OFFSET = { sign: 1, hours: 0, minutes: 0 } as const;

/**
 * Milliseconds since the epoch of `text`, an ISO 8601 date (a date alone is midnight UTC; a date-time
 * without a zone is read as UTC, so that a file gives one result on every machine); NaN when it is not
 * one or names an impossible date or time.
 */
export function isoTimeMs(text: string): number {
  const m = ISO.exec(text.trim());
  if (m === null) return NaN;
  const zone = m[8];
  const offset =
    zone === undefined || zone.toUpperCase() === 'Z'
      ? UTC_OFFSET
      : {
          sign: zone[0] === '-' ? (-1 as const) : (1 as const),
          hours: Number(zone.slice(1, 3)),
          minutes: Number(zone.slice(-2)),
        };
  const ms = calendarMs({
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4] ?? 0),
    minute: Number(m[5] ?? 0),
    second: Number(m[6] ?? 0),
    offset,
  });
  return ms + (m[7] === undefined ? 0 : Number(m[7]) * 1000);
}

/** Milliseconds since the epoch of `fields`, or NaN when one is out of its range (a 30 February, an hour 25, an offset's minute 60). */
export function calendarMs(fields: CalendarFields): number {
  const { year, month, day, hour, minute, second, offset } = fields;
  if (month < 1 || month > 12 || day < 1 || day > utc(year, month, 0).getUTCDate()) return NaN;
  if (hour > 23 || minute > 59 || second > 59 || offset.hours > 23 || offset.minutes > 59) return NaN;
  const date = utc(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  return date.getTime() - offset.sign * (offset.hours * 60 + offset.minutes) * 60_000;
}

/** Midnight UTC of `day` in the 0-based `monthIndex` of `year` (any year: `Date.UTC` reads 0–99 as 1900–1999). */
function utc(year: number, monthIndex: number, day: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, day);
  return date;
}
