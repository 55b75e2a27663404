import { concurrency } from '../../algorithms/concurrency.js';
import type { KindSuite } from '../kind-suite.js';

/** Concurrency permits: taken, released once, expiring with their lease. */
export const concurrencySuite: KindSuite = {
  kind: 'concurrency',
  samples: [],
  configurations: [({ limit, windowMs }) => concurrency({ limit, lease: windowMs })],
  scenarios: {
    concurrency: [
      {
        name: 'concurrency: 2 permits, lease 1s',
        description:
          'A third request waits for a release or for the oldest lease to expire; a double release frees one permit only.',
        algorithms: [concurrency({ limit: 2, lease: '1s' })],
        steps: [
          { at: 0, op: 'acquire', lease: 'a', expect: { admitted: 1, last: { remaining: 1 } } },
          { at: 100, op: 'acquire', lease: 'b', expect: { admitted: 1, last: { remaining: 0 } } },
          { at: 200, op: 'acquire', lease: 'c', expect: { admitted: 0, last: { retryAfterMs: 800 } } },
          { at: 300, op: 'release', lease: 'a' },
          { at: 300, op: 'acquire', lease: 'd', expect: { admitted: 1 } },
          { at: 400, op: 'acquire', lease: 'e', expect: { admitted: 0, last: { retryAfterMs: 700 } } },
          { at: 400, op: 'release', lease: 'a' },
          { at: 400, op: 'acquire', lease: 'e', expect: { admitted: 0 } },
          { at: 1100, op: 'acquire', lease: 'f', expect: { admitted: 1, last: { remaining: 0 } } },
        ],
      },
    ],
  },
};

/** The concurrency limit's suite, as a family's list. */
export const concurrencySuites: readonly KindSuite[] = [concurrencySuite];
