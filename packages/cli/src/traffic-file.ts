import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { InvalidOptionError } from '@rl/core';
import { calendarMs, isoTimeMs } from './calendar-time.js';
import { TrafficBuilder, type Traffic } from './traffic.js';

/** The formats of a traffic file; `auto` picks one from the first line that is not blank. */
export type TrafficFormat = 'csv' | 'jsonl' | 'log' | 'auto';

const MONTHS: Record<string, number> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
};
/** The time of the NCSA common / combined log format (nginx, Apache): `[10/Oct/2000:13:55:36 -0700]`. */
const LOG_TIME = /\[(\d{2})\/([A-Z][a-z]{2})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\]/;

/**
 * Reads arrivals from a file, one per line:
 * - `csv`: `time,key,cost` (key and cost optional; a first line whose time is not a number is a header);
 * - `jsonl`: `{"time": 0.99, "key": "user:42", "cost": 1}` (key and cost optional);
 * - `log`: an access log in the common or combined format (nginx's and Apache's default): the time in
 *   brackets, the client address (the first field) as the key, cost 1. Its times have whole seconds, so
 *   the requests of one second arrive at one instant.
 *
 * A `time` is seconds as a number (`0.99`; from any origin: Unix seconds keep windows aligned as in
 * production) or an ISO 8601 date string (without a zone: UTC, the same on every machine; an
 * impossible date or time is refused). The arrivals are sorted by time (ties keep their order).
 * Throws `InvalidOptionError` naming the file and line for a line it cannot read.
 */
export async function readTrafficFile(path: string, format: TrafficFormat = 'auto'): Promise<Traffic> {
  const builder = new TrafficBuilder();
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  let chosen = format;
  let n = 0;
  try {
    for await (const raw of lines) {
      n++;
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      if (chosen === 'auto') chosen = line.startsWith('{') ? 'jsonl' : LOG_TIME.test(line) ? 'log' : 'csv';
      const field = `--traffic ${path} line ${n}`;
      if (chosen === 'jsonl') readJsonLine(line, field, builder);
      else if (chosen === 'log') readLogLine(line, field, builder);
      else readCsvLine(line, field, builder);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new InvalidOptionError('--traffic', path, 'a file that exists');
    // Another failure of the file system (a directory, a file not ours to read): the option to fix, not a stack.
    if (typeof code === 'string' && !(error instanceof InvalidOptionError))
      throw new InvalidOptionError('--traffic', path, `a file that can be read (${code})`);
    throw error;
  }
  if (builder.size === 0) throw new InvalidOptionError('--traffic', path, 'a file with at least one arrival');
  return builder.build();
}

function readCsvLine(line: string, field: string, builder: TrafficBuilder): void {
  const cells = line.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1'));
  // A header: the first line whose time is not a number or a date.
  if (builder.size === 0 && /^[a-z_ ]+$/i.test(cells[0]!)) return;
  const time = timeMs(cells[0], field);
  const cost = cells[2] === undefined || cells[2] === '' ? 1 : costOf(Number(cells[2]), cells[2], field);
  builder.add(time, cells[1] === undefined || cells[1] === '' ? 'key' : cells[1], cost);
}

function readJsonLine(line: string, field: string, builder: TrafficBuilder): void {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new InvalidOptionError(field, line, 'a JSON object such as {"time": 0.99, "key": "user:42", "cost": 1}');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidOptionError(field, line, 'a JSON object such as {"time": 0.99, "key": "user:42", "cost": 1}');
  }
  const o = value as { time?: unknown; key?: unknown; cost?: unknown };
  const key = o.key === undefined ? 'key' : o.key;
  if (typeof key !== 'string' || key === '') throw new InvalidOptionError(`${field} key`, key, 'a non-empty string');
  const cost = o.cost === undefined ? 1 : costOf(o.cost, o.cost, field);
  builder.add(timeMs(o.time, field), key, cost);
}

function readLogLine(line: string, field: string, builder: TrafficBuilder): void {
  const m = LOG_TIME.exec(line);
  if (m === null)
    throw new InvalidOptionError(field, line, 'an access-log line with a time such as [10/Oct/2000:13:55:36 -0700]');
  const month = MONTHS[m[2]!];
  if (month === undefined) throw new InvalidOptionError(field, m[0], 'a month Jan … Dec');
  const utc = calendarMs({
    year: Number(m[3]),
    month: month + 1,
    day: Number(m[1]),
    hour: Number(m[4]),
    minute: Number(m[5]),
    second: Number(m[6]),
    offset: { sign: m[7] === '-' ? -1 : 1, hours: Number(m[8]), minutes: Number(m[9]) },
  });
  if (Number.isNaN(utc))
    throw new InvalidOptionError(field, m[0], 'a time that exists, such as [10/Oct/2000:13:55:36 -0700]');
  const client = line.slice(0, line.indexOf(' ')) || 'key';
  builder.add(utc, client, 1);
}

/** The times a date can hold (ms from the epoch, either way): the simulation's clock reads no other. */
const MAX_TIME_MS = 8.64e15;

/** A time in seconds (a number or a numeric string) or an ISO 8601 date, as milliseconds within ±{@link MAX_TIME_MS}. */
function timeMs(value: unknown, field: string): number {
  let ms = NaN;
  if (typeof value === 'number') ms = value * 1000;
  else if (typeof value === 'string' && value !== '') {
    const seconds = Number(value);
    ms = Number.isFinite(seconds) ? seconds * 1000 : isoTimeMs(value);
  }
  if (Math.abs(ms) <= MAX_TIME_MS) return ms;
  throw new InvalidOptionError(
    `${field} time`,
    value,
    'seconds as a number (0.99) or an ISO 8601 date that exists (2026-08-07T10:00:00.990Z; without a zone, UTC), within the dates a clock reads (±8.64e12 seconds from 1970)',
  );
}

function costOf(value: unknown, shown: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    throw new InvalidOptionError(`${field} cost`, shown, 'a finite number greater than 0');
  return value;
}
