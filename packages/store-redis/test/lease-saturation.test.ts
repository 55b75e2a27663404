/**
 * Quota leases at saturation on a real Redis (issue 39): four instances (each with its own client and
 * RedisStore, as four processes have) hammer one key with `lease: { units: 50 }`, for each leasable
 * algorithm at about 1000 units a second with 200 at once. Once a key's blocks run short, an instance
 * denies its requests locally until the store would have the next block: the script calls Redis ran
 * (INFO commandstats) stay within 0.1 per admitted request, and nothing is admitted beyond the
 * algorithm's bound. The limiters' clock is explicit and moves 1 ms per step once every request of
 * the step is answered (5 per instance): the same load on every run, whatever the machine.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket } from '@rl/core';
import type { Algorithm, Decision } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { RedisStore } from '@rl/store-redis';
import { sleep, useRedis } from '@rl/test-support';

const redis = useRedis('lease-saturation');
const INSTANCES = 4;
const UNITS = 50;
const STEPS = 600;
const PER_STEP = 5;
/** The clock's start: a multiple of every window here, so that window k is [T0 + 200k, T0 + 200(k + 1)). */
const T0 = 1_800_000_000_000;

/** Script calls (EVALSHA and EVAL) the server has run so far. */
async function scriptCalls(): Promise<number> {
  const info = await redis.client.info('commandstats');
  let calls = 0;
  for (const command of ['evalsha', 'eval'])
    calls += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return calls;
}

/** Connections listening on the resets of `prefix` (each store subscribes once its limiter asks for a block). */
async function listening(prefix: string): Promise<number> {
  const [, count] = (await redis.client.call('PUBSUB', 'NUMSUB', `{${prefix}resets}`)) as [string, number];
  return Number(count);
}

interface Admitted {
  /** Ms since T0 when it was answered. */
  readonly t: number;
  readonly decision: Decision;
}

/** {@link INSTANCES} instances at saturation for {@link STEPS} ms: what they admitted, and the script calls they cost. */
async function saturate(algorithm: Algorithm): Promise<{ admitted: Admitted[]; calls: number }> {
  const prefix = redis.freshPrefix();
  const timers = new FakeTimers();
  const clock = (): number => T0 + timers.now();
  const clients = Array.from({ length: INSTANCES }, () => new Redis(redis.url));
  try {
    await Promise.all(clients.map((client) => client.ping()));
    const limiters = clients.map((client) =>
      createLimiter({
        algorithm,
        store: new RedisStore({ client, prefix }),
        clock,
        timers,
        timeout: false,
        lease: { units: UNITS },
      }),
    );
    const admitted: Admitted[] = [];
    const consume = (l: (typeof limiters)[number]) =>
      l.consume('hot').then((decision) => void (decision.allowed && admitted.push({ t: timers.now(), decision })));
    const before = await scriptCalls();
    // The first request of each takes its first block; then the stores' subscriptions to resets come
    // up (until they do, no denial is repeated locally: a reset could not be heard).
    await Promise.all(limiters.map(consume));
    for (let i = 0; i < 200 && (await listening(prefix)) < INSTANCES; i++) await sleep(10);
    expect(await listening(prefix)).toBe(INSTANCES);
    for (let step = 0; step < STEPS; step++) {
      await Promise.all(limiters.flatMap((l) => Array.from({ length: PER_STEP }, () => consume(l))));
      timers.advance(1);
    }
    const calls = (await scriptCalls()) - before;
    await Promise.all(limiters.map((l) => l.close()));
    return { admitted, calls };
  } finally {
    for (const client of clients) client.disconnect();
  }
}

/** The figures of a run, in an assertion's message: shown when it fails. */
const figures = (name: string, { admitted, calls }: { admitted: Admitted[]; calls: number }) =>
  `${name}: ${admitted.length} admitted, ${calls} script calls (${(calls / admitted.length).toFixed(3)} per admitted request)`;

describe(`${INSTANCES} instances at saturation on one key, lease of ${UNITS}, ${STEPS} ms`, () => {
  it.each([
    { name: 'token bucket', algorithm: tokenBucket({ capacity: 200, refillRate: 1000 }) },
    { name: 'leaky bucket (meter)', algorithm: leakyBucket({ capacity: 200, leakRate: 1000 }) },
  ])(
    '$name: at most capacity + rate × t by any time t; at most 0.1 script calls per admitted request',
    async ({ name, algorithm }) => {
      const run = await saturate(algorithm);
      const { admitted, calls } = run;
      for (let i = 0; i < admitted.length; i++)
        expect(i + 1, figures(name, run)).toBeLessThanOrEqual(200 + admitted[i]!.t);
      // Under-admission: a block per instance held, less than a block waiting in the bucket.
      expect(admitted.length, figures(name, run)).toBeGreaterThanOrEqual(200 + STEPS - (INSTANCES + 1) * UNITS);
      expect(calls / admitted.length, figures(name, run)).toBeLessThanOrEqual(0.1);
    },
  );

  it('fixed window: at most the limit in each window; at most 0.1 script calls per admitted request', async () => {
    const run = await saturate(fixedWindow({ limit: 200, window: 200 }));
    const perWindow = new Map<number, number>();
    for (const { decision } of run.admitted) {
      const window = Math.floor((decision.at - T0) / 200);
      perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    }
    expect(Math.max(...perWindow.values()), figures('fixed window', run)).toBeLessThanOrEqual(200);
    expect(run.calls / run.admitted.length, figures('fixed window', run)).toBeLessThanOrEqual(0.1);
  });

  it('sliding window log: at most the limit and a block per instance in any window; at most 0.1 script calls per admitted request', async () => {
    const run = await saturate(slidingWindowLog({ limit: 200, window: 200 }));
    const times = run.admitted.map((a) => a.t);
    let fullest = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (j < times.length && times[j]! < times[i]! + 200) j++;
      fullest = Math.max(fullest, j - i);
    }
    expect(fullest, figures('sliding window log', run)).toBeLessThanOrEqual(200 + INSTANCES * UNITS);
    expect(run.calls / run.admitted.length, figures('sliding window log', run)).toBeLessThanOrEqual(0.1);
  });

  it('sliding window counter: at most the limit per window it charged in; at most 0.1 script calls per admitted request', async () => {
    const run = await saturate(slidingWindowCounter({ limit: 200, window: 200 }));
    const { admitted } = run;
    for (let i = 0; i < admitted.length; i++)
      expect(i + 1, figures('sliding window counter', run)).toBeLessThanOrEqual(
        200 * (Math.floor(admitted[i]!.t / 200) + 1),
      );
    expect(run.calls / admitted.length, figures('sliding window counter', run)).toBeLessThanOrEqual(0.1);
  });
});
