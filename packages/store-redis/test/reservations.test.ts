/**
 * Reservations on Redis: the conformance suite runs their tables and properties on standalone and
 * Cluster; here, what needs two store instances (two clients, as two processes would have) and a
 * count of commands. Every decision is on Redis TIME, the clock the instances share.
 */
import { Redis, type Cluster } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  leakyBucket,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Duration,
  type Reservation,
} from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { useRedisDeployments } from '@rl/test-support';

const redis = useRedisDeployments('reservations');

/** EVALSHA calls Redis has run so far (`INFO commandstats`), summed over the given nodes. */
async function evalshaCalls(clients: readonly Redis[]): Promise<number> {
  let calls = 0;
  for (const client of clients) {
    const info = await client.info('commandstats');
    calls += Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0);
  }
  return calls;
}

describe.each<[string, Algorithm, number, Duration]>([
  // 5 tokens, then one every 2 s: within 4 s, 5 at once and 2 more.
  ['token bucket (compact layout)', tokenBucket({ capacity: 5, refillRate: 5, interval: '10s' }), 7, '4s'],
  // 3 in any 10 s: 3 at once, and 3 more when the first ones leave the window, 10 s later.
  ['sliding window log (keys of their own)', slidingWindowLog({ limit: 3, window: '10s' }), 6, '10s'],
  // A wait longer than the burst: 2 at once, then one every 100 ms for 2 s; all 12 fit.
  [
    'token bucket, waits longer than its burst (2 at 10/s, 2 s)',
    tokenBucket({ capacity: 2, refillRate: 10 }),
    12,
    '2s',
  ],
  // A shaper's queue as long as the wait: one every 100 ms for 1 s, 10 slots of a queue of 2.
  [
    'leaky bucket shaper, a queue longer than its capacity (2 at 10/s, 1 s)',
    leakyBucket({ capacity: 2, leakRate: 10, mode: 'shape' }),
    10,
    '1s',
  ],
])('reservations on Redis: %s', (_name, algorithm, admits, maxDelay) => {
  for (const deployment of ['standalone', 'clustered'] as const) {
    it(`${deployment}: two store instances on two clients queue in one FIFO; the reservations of one turn are two script calls per store`, async () => {
      const prefix = redis.freshPrefix();
      const first: Redis | Cluster = redis[deployment];
      const second: Redis | Cluster =
        deployment === 'standalone' ? new Redis(redis.standalone.options) : redis.clustered.duplicate();
      const nodes = deployment === 'standalone' ? [redis.standalone] : redis.clustered.nodes('master');
      try {
        const options = { algorithm, timeout: false as const, denyCache: false };
        const a = createLimiter({ ...options, store: new RedisStore({ client: first, prefix }) });
        const b = createLimiter({ ...options, store: new RedisStore({ client: second, prefix }) });
        // Each store's scripts (alone and batched) loaded on the key's node (a first call may need
        // EVAL): counted from here.
        await Promise.all([a.reserve('shared', 1, { maxDelay }), a.reserve('shared', 1, { maxDelay })]);
        await Promise.all([b.reserve('shared', 1, { maxDelay }), b.reserve('shared', 1, { maxDelay })]);
        await a.reset('shared');
        const before = await evalshaCalls(nodes);
        const reservations: Reservation[] = await Promise.all(
          Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).reserve('shared', 1, { maxDelay })),
        );
        // Per store: the first alone, at once; the five after it in one batch call.
        expect(await evalshaCalls(nodes)).toBe(before + 4);
        const admitted = reservations.filter((r) => r.allowed);
        expect(admitted).toHaveLength(admits);
        // In the order Redis decided them (its TIME, `at`), the slots never go back.
        const slots = admitted
          .map((r) => ({ at: r.at, slot: r.at + r.delayMs }))
          .sort((x, y) => x.at - y.at || x.slot - y.slot);
        for (let i = 1; i < slots.length; i++) expect(slots[i]!.slot).toBeGreaterThanOrEqual(slots[i - 1]!.slot);
        for (const denied of reservations.filter((r) => !r.allowed))
          expect(denied).toMatchObject({ delayMs: 0, retryAfterMs: expect.any(Number) });
        // The last one cancelled: a new reservation gets its slot (to the ms), never an earlier one.
        const last = admitted.reduce((x, y) => (y.at + y.delayMs >= x.at + x.delayMs ? y : x));
        await last.cancel();
        const again = await b.reserve('shared', 1, { maxDelay });
        expect(again.allowed).toBe(true);
        expect(again.at + again.delayMs).toBeGreaterThanOrEqual(last.at + last.delayMs - 1);
      } finally {
        second.disconnect();
      }
    });
  }
});
