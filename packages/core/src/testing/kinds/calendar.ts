import { withBlock } from '../../algorithms/block.js';
import { calendarWindow } from '../../algorithms/calendar-window.js';
import { seedBatches, type KindSuite } from '../kind-suite.js';

// The calendar window's suite, at named instants (UTC unless the name says otherwise); listed with
// the window algorithms' in windows.ts.

const SECOND = 1_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** An instant given in UTC. */
const utc = (iso: string): number => Date.parse(`${iso}Z`);

/** Calendar window: periods of a calendar in a time zone, counted as a fixed window counts. */
export const calendarWindowSuite: KindSuite = {
  kind: 'calendar-window',
  // Its periods are the calendar's, not a window of any length: the checks that draw a window take
  // the hour (the drawn window then only spaces the requests).
  samples: [(limit) => calendarWindow({ limit, period: 'hour' })],
  configurations: [
    ({ limit, countDenied }) => calendarWindow({ limit, period: 'hour', countDenied }),
    ({ limit }) => calendarWindow({ limit, period: 'day', timeZone: 'Europe/Paris' }),
  ],
  scenarios: {
    seed: [
      {
        name: 'seed: calendar window, 100 per hour (UTC)',
        description: 'Both batches fall in the hour [00:00, 01:00): the first fills it, the second waits for 01:00.',
        algorithms: [calendarWindow({ limit: 100, period: 'hour' })],
        steps: seedBatches(
          { admitted: 100, last: { remaining: 0, resetMs: HOUR - 990 } },
          { admitted: 0, last: { retryAfterMs: HOUR - 1010 } },
        ),
      },
    ],
    timing: [
      {
        name: 'timing: calendar month, 2 per month, Jan 31 23:59:59 → Feb 1 (2027, a common year)',
        description: 'The month ends at midnight of the 1st: Retry-After counts to it, and February resets in 28 days.',
        algorithms: [calendarWindow({ limit: 2, period: 'month' })],
        steps: [
          {
            at: utc('2027-01-31T23:59:59'),
            times: 3,
            expect: { admitted: 2, last: { allowed: false, remaining: 0, resetMs: SECOND, retryAfterMs: SECOND } },
          },
          { at: utc('2027-02-01T00:00:00'), expect: { admitted: 1, last: { remaining: 1, resetMs: 28 * DAY } } },
        ],
      },
      {
        name: 'timing: calendar day in Europe/Paris, 23:59:30 local (22:59:30 UTC in winter)',
        description: 'Retry-After at 23:59:30 local is 30 s: the day ends at local midnight, not at UTC midnight.',
        algorithms: [calendarWindow({ limit: 1, period: 'day', timeZone: 'Europe/Paris' })],
        steps: [
          {
            at: utc('2026-12-02T22:59:30'),
            times: 2,
            expect: { admitted: 1, last: { allowed: false, retryAfterMs: 30 * SECOND, resetMs: 30 * SECOND } },
          },
          { at: utc('2026-12-02T23:00:00'), expect: { admitted: 1, last: { resetMs: DAY } } },
        ],
      },
    ],
    edge: [
      {
        name: 'edge: calendar month, Feb 28 and 29 in a leap year (2028) and in a common year (2027)',
        description: 'Feb 29 2028 is still February (reset at Mar 1); in 2027 Mar 1 follows Feb 28.',
        algorithms: [calendarWindow({ limit: 1, period: 'month' })],
        steps: [
          { at: utc('2028-02-28T12:00:00'), expect: { admitted: 1, last: { resetMs: 36 * HOUR } } },
          { at: utc('2028-02-29T12:00:00'), expect: { admitted: 0, last: { retryAfterMs: 12 * HOUR } } },
          { at: utc('2028-03-01T00:00:00'), expect: { admitted: 1, last: { resetMs: 31 * DAY } } },
          { at: utc('2027-02-28T12:00:00'), key: 'common', expect: { admitted: 1, last: { resetMs: 12 * HOUR } } },
          { at: utc('2027-03-01T00:00:00'), key: 'common', expect: { admitted: 1 } },
        ],
      },
      {
        name: 'edge: calendar day in Europe/Paris on its two DST changes (2026-03-29: 23 h; 2026-10-25: 25 h)',
        description: 'The day the clocks go forward resets 23 h after local midnight, the day they go back 25 h after.',
        algorithms: [calendarWindow({ limit: 1, period: 'day', timeZone: 'Europe/Paris' })],
        steps: [
          { at: utc('2026-03-28T23:00:00'), expect: { admitted: 1, last: { resetMs: 23 * HOUR } } },
          { at: utc('2026-03-29T21:59:59'), expect: { admitted: 0, last: { retryAfterMs: SECOND } } },
          { at: utc('2026-03-29T22:00:00'), expect: { admitted: 1, last: { resetMs: 24 * HOUR } } },
          { at: utc('2026-10-24T22:00:00'), key: 'autumn', expect: { admitted: 1, last: { resetMs: 25 * HOUR } } },
          { at: utc('2026-10-25T22:59:59'), key: 'autumn', expect: { admitted: 0, last: { retryAfterMs: SECOND } } },
          { at: utc('2026-10-25T23:00:00'), key: 'autumn', expect: { admitted: 1 } },
        ],
      },
      {
        name: 'edge: calendar day in America/St_Johns (UTC−2:30 in summer), and its hours at :30 UTC',
        description: 'A half-hour zone: the day starts at 02:30 UTC, each local hour at half past a UTC hour.',
        algorithms: [
          calendarWindow({ limit: 1, period: 'day', timeZone: 'America/St_Johns' }),
          calendarWindow({ limit: 1, period: 'hour', timeZone: 'America/St_Johns' }),
        ],
        steps: [
          { at: utc('2026-06-01T02:29:59'), expect: { admitted: 1, last: { resetMs: SECOND } } },
          { at: utc('2026-06-01T02:30:00'), expect: { admitted: 1, last: { resetMs: DAY } } },
          {
            at: utc('2026-06-01T12:00:00'),
            key: 'hourly',
            algorithm: 1,
            times: 2,
            expect: { admitted: 1, last: { retryAfterMs: HOUR / 2 } },
          },
          {
            at: utc('2026-06-01T12:30:00'),
            key: 'hourly',
            algorithm: 1,
            expect: { admitted: 1, last: { resetMs: HOUR } },
          },
        ],
      },
      {
        name: 'edge: calendar week in UTC, from Monday (the default) and from Sunday',
        description: 'Wednesday 2026-12-02: the Monday week ends on Dec 7, the Sunday week on Dec 6.',
        algorithms: [
          calendarWindow({ limit: 1, period: 'week' }),
          calendarWindow({ limit: 1, period: 'week', weekStart: 'sunday' }),
        ],
        steps: [
          { at: utc('2026-12-02T00:00:00'), expect: { admitted: 1, last: { resetMs: 5 * DAY } } },
          {
            at: utc('2026-12-02T00:00:00'),
            key: 'sunday',
            algorithm: 1,
            expect: { admitted: 1, last: { resetMs: 4 * DAY } },
          },
        ],
      },
    ],
    clock: [
      {
        name: 'clock back: calendar hour',
        description: 'A call that falls back into an earlier hour keeps counting in the stored one.',
        algorithms: [calendarWindow({ limit: 2, period: 'hour' })],
        steps: [
          { at: utc('2026-12-02T10:30:00'), times: 2, expect: { admitted: 2 } },
          { at: utc('2026-12-02T09:59:00'), expect: { admitted: 0 } },
          { at: utc('2026-12-02T11:00:00'), expect: { admitted: 1 } },
        ],
      },
    ],
    giveBack: [
      {
        name: 'give-back: calendar day, charged at 23:59 and given back after midnight',
        description:
          'The day rolled over in between: the new day keeps its count; a give-back within its own day frees the unit.',
        algorithms: [calendarWindow({ limit: 2, period: 'day' })],
        steps: [
          { at: utc('2026-12-02T23:59:00'), name: 'late', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: utc('2026-12-03T00:00:00'), times: 2, name: 'early', expect: { admitted: 2, last: { remaining: 0 } } },
          { at: utc('2026-12-03T00:01:00'), op: 'undo', of: 'late' },
          { at: utc('2026-12-03T00:01:00'), op: 'peek', expect: { last: { remaining: 0 } } },
          { at: utc('2026-12-03T00:02:00'), op: 'undo', of: 'early' },
          { at: utc('2026-12-03T00:02:00'), op: 'peek', expect: { last: { remaining: 1 } } },
        ],
      },
    ],
    reservation: [
      {
        name: 'reservation: calendar hour, 2 per hour',
        description:
          'A full hour reserves the start of the next one when it is within maxDelay; a consume then waits behind it.',
        algorithms: [calendarWindow({ limit: 2, period: 'hour' })],
        steps: [
          { at: utc('2026-12-02T10:50:00'), times: 2, expect: { admitted: 2 } },
          {
            at: utc('2026-12-02T10:50:00'),
            op: 'reserve',
            maxDelay: 5 * 60_000,
            expect: { admitted: 0, last: { retryAfterMs: 5 * 60_000 } },
          },
          {
            at: utc('2026-12-02T10:50:00'),
            op: 'reserve',
            maxDelay: 10 * 60_000,
            expect: { delays: [10 * 60_000], last: { remaining: 1 } },
          },
          { at: utc('2026-12-02T10:50:00'), expect: { admitted: 0, last: { retryAfterMs: 10 * 60_000 } } },
          { at: utc('2026-12-02T11:00:00'), expect: { admitted: 1, last: { remaining: 0 } } },
        ],
      },
    ],
  },
  lockouts: [
    {
      name: 'lockout: calendar day, 3 per day, a 2-hour block',
      description: 'A denial blocks the key for 2 hours, across midnight; after it the new day admits.',
      algorithms: [withBlock(calendarWindow({ limit: 3, period: 'day' }), 2 * HOUR)],
      steps: [
        {
          at: utc('2026-12-02T23:00:00'),
          times: 4,
          expect: { admitted: 3, last: { allowed: false, retryAfterMs: 2 * HOUR } },
        },
        { at: utc('2026-12-03T00:30:00'), expect: { admitted: 0, last: { retryAfterMs: HOUR / 2 } } },
        { at: utc('2026-12-03T01:00:00'), expect: { admitted: 1, last: { remaining: 2 } } },
      ],
    },
  ],
};
