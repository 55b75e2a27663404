// The configurations of the burst experiment: the seed's limits of 200/s, each algorithm with no wait
// and with `wait: { maxDelay: '500ms' }` (the seed's 500 ms of queueing), and the seed's figures.

export const RATE = 200;
export const MAX_DELAY = '500ms';

/** Per algorithm: the limit without waiting, and the one used with `wait`. */
export const ALGORITHMS = {
  'token-bucket': { call: 'tokenBucket', options: { capacity: 400, refillRate: RATE, interval: '1s' } },
  'fixed-window': { call: 'fixedWindow', options: { limit: RATE, window: '1s' } },
  'sliding-log': { call: 'slidingWindowLog', options: { limit: RATE, window: '1s' } },
  'sliding-counter': { call: 'slidingWindowCounter', options: { limit: RATE, window: '1s' } },
  // Without waiting, the bucket meters (GCRA: a burst of its capacity passes at once); with waiting,
  // it shapes: a queue of 100 requests at 200/s is the same 500 ms of queueing as `maxDelay`.
  'leaky-bucket': {
    call: 'leakyBucket',
    options: { capacity: RATE, leakRate: RATE, interval: '1s' },
    waitCall: 'leakyBucket',
    waitOptions: { capacity: 100, leakRate: RATE, interval: '1s', mode: 'shape' },
  },
};

export const STORES = ['memory', 'redis'];

/** The list of configurations to run, in order: the baseline first, then algorithm × wait × store. */
export function configurations({ algorithms = Object.keys(ALGORITHMS), stores = STORES } = {}) {
  const out = [{ id: 'baseline', kind: 'baseline', label: 'node:http, no limit', store: '-' }];
  for (const store of stores) {
    for (const a of algorithms) {
      const spec = ALGORITHMS[a];
      for (const wait of [false, true]) {
        const limit =
          wait && spec.waitCall
            ? { call: spec.waitCall, options: spec.waitOptions }
            : { call: spec.call, options: spec.options };
        out.push({
          id: `${a}-${wait ? 'wait' : 'nowait'}-${store}`,
          kind: 'fastify',
          algorithm: a,
          store,
          limit,
          // A shaping bucket requires `wait` too: its `maxDelay` is the longest hold.
          wait: wait ? MAX_DELAY : null,
          waits: wait,
          label: `${a} ${wait ? `wait ${MAX_DELAY}` : 'no wait'} (${store})`,
          prefix: `exp-${a}-${wait ? 'w' : 'n'}-${Date.now().toString(36)}:`,
        });
      }
    }
  }
  return out;
}

/** The algorithm object of a configuration's `limit`, built with the given @rl/core module. */
export function algorithmOf(core, limit) {
  return core[limit.call](limit.options);
}

/** The seed's figures (Spring Cloud Gateway 2.2.9, Redis, 60 s at 50/s then 300 s at 600/s, 500 ms queue). */
export const SEED = {
  'token-bucket': {
    sent: 180_000,
    admitted: 60_000,
    denied: 120_000,
    p50: 6,
    p95: 18,
    p99: 23,
    max: 47,
    deniedMean: 487,
  },
  'fixed-window': {
    sent: 180_000,
    admitted: 60_000,
    denied: 120_000,
    p50: 8,
    p95: 240,
    p99: 310,
    max: 498,
    deniedMean: 492,
  },
};
