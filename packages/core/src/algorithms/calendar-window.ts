import type { NumericAlgorithm, TimedConstants } from '../algorithm.js';
import { makePolicy, type Policy } from '../decision.js';
import { checkOptions, countOption, optionalBoolean } from '../options.js';
import {
  calendarPeriods,
  PERIOD_SPAN,
  WEEKDAYS,
  type CalendarPeriod,
  type CalendarPeriods,
  type Weekday,
} from './calendar-periods.js';
import { compactFields } from './define.js';
import { windowCounter, type WindowPeriods } from './window-counter.js';

export type { CalendarPeriod, Weekday } from './calendar-periods.js';

/** `limit` units per calendar `period` in `timeZone`. */
export interface CalendarWindowOptions {
  /** Units admitted per period (an integer from 1 to 999999999999999). */
  limit: number;
  /** The calendar period: `'hour'`, `'day'`, `'week'`, `'month'` or `'year'`. */
  period: CalendarPeriod;
  /** An IANA time zone (`'Europe/Paris'`): periods start at local midnight (the local hour), DST included. Default `'UTC'`. */
  timeZone?: string;
  /** For `period: 'week'`: the day a week starts, `'monday'` (the default, ISO 8601) … `'sunday'`, or 0 (Sunday) to 6. */
  weekStart?: Weekday | number;
  /** Count denied requests too (see `fixedWindow`). Default false. */
  countDenied?: boolean;
}

/** The nominal length of a period (ms), for a decision that knows no period (a store outage's). */
const NOMINAL: Readonly<Record<CalendarPeriod, number>> = {
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
  month: 2_592_000_000,
  year: 31_536_000_000,
};

/** The period boundaries the Redis twin is sent (see {@link boundaries}). */
const BOUND_NAMES = ['BOUND_0', 'BOUND_1', 'BOUND_2', 'BOUND_3', 'BOUND_4', 'BOUND_5'];

/**
 * Calendar window: at most `limit` units in each calendar period (`hour`, `day`, `week`, `month`,
 * `year`) of a time zone, counted as `fixedWindow` counts in its windows (the same state, give-backs,
 * settles and reservations, which go at most into the next period). Periods start at the local start
 * of the period (00:00 of the 1st for a month, the local hour for an hour), so a day is 23 or 25 hours
 * long on the days the clocks change, a month has its real length, and a year 365 or 366 days; see
 * `CalendarPeriods` for the rare local times a transition skips or repeats. `Retry-After` and `t` count
 * to the end of the period, and `RateLimit-Policy`'s `w` is the current period's real length.
 *
 * A store that runs the step elsewhere (Redis) is sent the boundaries of six periods around the
 * caller's clock with each call (`ScriptDescriptor.timed`) and decides on its own clock: it stays
 * exact while the two clocks are less than a period apart, and fails the call (the failure policy
 * decides) beyond.
 */
export function calendarWindow(options: CalendarWindowOptions): NumericAlgorithm {
  const owner = 'calendarWindow';
  const o = checkOptions(options, ['limit', 'period', 'timeZone', 'weekStart', 'countDenied'], owner);
  const limit = countOption(o.limit, `${owner}.limit`);
  const periods = calendarPeriods(o.period, o.timeZone === undefined ? 'UTC' : o.timeZone, o.weekStart, owner);
  const countDenied = optionalBoolean(o.countDenied, `${owner}.countDenied`, false);
  const period = periods.period;
  const { shortest, longest } = PERIOD_SPAN[period];
  const name = `${limit}-per-${period}`;
  const policy = makePolicy(limit, NOMINAL[period], name);
  const policies = new Map<number, Policy>();
  const policyOf = (start: number): Policy => {
    const length = periods.endOf(start) - start;
    let p = policies.get(length);
    if (p === undefined) policies.set(length, (p = makePolicy(limit, length, name)));
    return p;
  };
  // Bound: `windowCounter` calls them unbound.
  const windows: WindowPeriods = {
    startOf: (t) => periods.startOf(t),
    endOf: (start) => periods.endOf(start),
    policyOf,
  };
  const weekStart = period === 'week' ? WEEKDAYS[periods.weekStart] : undefined;
  const where = `${period === 'week' ? `week from ${weekStart}` : period} in ${periods.timeZone}`;

  return {
    // `[periodStart, count]`, as a fixed window's; a state is the same as no state when its period ends.
    ...compactFields({
      kind: 'calendar-window',
      stateTag: 'cw',
      stateSize: 2,
      // A reservation may hold the next period: the state lives until it ends.
      horizonMs: 2 * longest,
      limit,
      maxCost: limit,
      policy,
      countDenied,
      mayDelay: false,
      // Any wait into the next period: the counter never reserves beyond it (see `windowCounter`).
      maxReserveMs: longest,
      options: { limit, period, timeZone: periods.timeZone, ...(weekStart && { weekStart }), countDenied },
      constants: [
        { name: 'LIMIT', value: limit },
        { name: 'COUNT_DENIED', value: countDenied ? 1 : 0 },
      ],
      timed: boundaries(periods),
    }),

    policyAt: (at: number) => policyOf(periods.startOf(at)),

    describe: () => `each calendar ${where} admits at most ${limit}; up to ${2 * limit} around a boundary`,

    // A span meets at most one period more than it could hold whole ones of the shortest length.
    boundInSpan: (spanMs: number) => limit * (Math.ceil(spanMs / shortest) + 1),

    // To the end of the period the block was counted in: a unit of this period is never spent in the next.
    leaseHoldMs: (at: number) => periods.endOf(periods.startOf(at)) - at,

    ...windowCounter(limit, countDenied, windows),
  };
}

/**
 * The boundaries the twin reads (`BOUND_0` … `BOUND_5`) for a call at `now`: the start of the period
 * before the caller's, of the caller's, and of the four after. The twin finds the period of its own
 * `now` among the first three, and reads the ends of that period and of the two after it.
 */
function boundaries(periods: CalendarPeriods): TimedConstants {
  let from = Infinity;
  let to = -Infinity;
  let values: readonly string[] = [];
  return {
    names: BOUND_NAMES,
    values(now: number): readonly string[] {
      if (now >= from && now < to) return values;
      const current = periods.startOf(now);
      const bounds = [periods.startOf(current - 1), current];
      while (bounds.length < BOUND_NAMES.length) bounds.push(periods.endOf(bounds[bounds.length - 1]!));
      [from, to] = [current, bounds[2]!];
      values = bounds.map(String);
      return values;
    },
  };
}
