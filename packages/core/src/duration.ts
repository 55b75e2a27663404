import { InvalidOptionError } from './errors.js';

/** A duration: a number of milliseconds, or a string such as `'250ms'`, `'1s'`, `'1.5s'`, `'15m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/**
 * Parses a {@link Duration} to milliseconds. Throws {@link InvalidOptionError} naming `field` for
 * anything that is not a finite duration greater than 0 (an unknown unit, NaN, 0, a negative number).
 */
export function parseDuration(value: unknown, field: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = DURATION_PATTERN.exec(value);
    if (!match) {
      throw new InvalidOptionError(
        field,
        value,
        "a duration: milliseconds as a number, or a string with a unit ms, s, m, h or d (for example '500ms', '1s', '15m')",
      );
    }
    ms = Number(match[1]) * UNIT_MS[match[2] as DurationUnit];
  } else {
    throw new InvalidOptionError(field, value, "a duration: milliseconds as a number, or a string such as '1s'");
  }
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new InvalidOptionError(field, value, 'a duration greater than 0');
  }
  return ms;
}

/** The longest delay a Node timer supports: 2^31 − 1 ms, about 24.8 days (a longer one fires after 1 ms). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * {@link parseDuration} for a duration that becomes a timer (an interval, a timeout, a hold): also
 * rejects one above {@link MAX_TIMER_MS}, which Node would turn into a timer of 1 ms.
 */
export function parseTimerDuration(value: unknown, field: string): number {
  const ms = parseDuration(value, field);
  if (ms > MAX_TIMER_MS)
    throw new InvalidOptionError(field, value, 'a duration of at most 24 days (the longest Node timer)');
  return ms;
}

/** Formats milliseconds compactly for policy names: 60000 → `1m`, 1500 → `1500ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit];
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
