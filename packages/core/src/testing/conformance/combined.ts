import { describe, expect } from 'vitest';
import { concurrency } from '../../algorithms/concurrency.js';
import { withBlock } from '../../algorithms/block.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { combineLimiters } from '../../compose/group.js';
import { createLimiter } from '../../limiter/index.js';
import {
  freshPrefix,
  gatedIt,
  limiterOn,
  rateSamples,
  resetsHeard,
  runsAll,
  samplesFor,
  type RateSample,
  type Suite,
} from './suite.js';

/** Limits combined with `combineLimiters`: all or nothing, and nothing charged for bad input. */
export function describeCombinedLimits(suite: Suite): void {
  /**
   * A tenant limit of 3 per hour (`first`) and a user limit of 2 per hour combined in that order, at a
   * fixed time. The user limit is the next algorithm the store runs after `first` (itself when it runs
   * only one), so each algorithm's give-back is checked, beside another kind where the store has one.
   */
  const tenantAndUser = (label: string, first: RateSample) => {
    const samples = samplesFor(suite.store);
    const second = samples[(samples.indexOf(first) + 1) % samples.length]!;
    const prefix = freshPrefix(label);
    const tenant = limiterOn(suite.store, first.make(3, 3_600_000), `${prefix}-tenant`, () => 1_000);
    const user = limiterOn(suite.store, second.make(2, 3_600_000), `${prefix}-user`, () => 1_000);
    return { tenant, user, group: combineLimiters([tenant, user]) };
  };

  describe('combined limits', () => {
    for (const sample of rateSamples) {
      const applies = () => runsAll(suite.store, [sample.kind]);
      gatedIt(
        `${sample.label} first: admits only if all admit; a denial by one uses no quota in the others`,
        applies,
        async () => {
          const { tenant, user, group } = tenantAndUser('combo', sample);
          expect((await group.consume(['acme', 'alice'])).allowed).toBe(true);
          expect((await group.consume(['acme', 'alice'])).allowed).toBe(true);
          const denied = await group.consume(['acme', 'alice']);
          expect(denied.allowed).toBe(false);
          expect(denied.deniedBy).toBe(1);
          // The tenant's unit taken by the denied request was given back: bob gets the last one.
          expect((await tenant.peek('acme')).remaining).toBe(1);
          const bob = await group.consume(['acme', 'bob']);
          expect(bob.allowed).toBe(true);
          expect(bob.remaining).toBe(0);
          const carol = await group.consume(['acme', 'carol']);
          expect(carol).toMatchObject({ allowed: false, deniedBy: 0 });
          // The user limit was not asked, so carol has her full quota.
          expect((await user.peek('carol')).remaining).toBe(2);
        },
      );

      gatedIt(
        `${sample.label} first: a bad key or cost for any limit rejects before any limit is charged`,
        applies,
        async () => {
          const { tenant, user, group } = tenantAndUser('combo-bad', sample);
          await expect(group.consume(['acme', 'alice'], [1, 5])).rejects.toMatchObject({
            code: 'RL_COST_EXCEEDS_CAPACITY',
          });
          await expect(group.consume(['acme', 'alice'], [1, -1])).rejects.toMatchObject({ code: 'RL_INVALID_COST' });
          await expect(group.consume(['acme', ''])).rejects.toMatchObject({ code: 'RL_INVALID_KEY' });
          await expect(group.consume(['acme'] as never)).rejects.toMatchObject({ code: 'RL_INVALID_OPTION' });
          expect((await tenant.peek('acme')).remaining).toBe(3);
          expect((await user.peek('alice')).remaining).toBe(2);
        },
      );
    }
  });
}

/** Concurrent calls on one key never admit more than the limit. */
export function describeAtomicity(suite: Suite): void {
  describe('limits asked in order, with deny caches', () => {
    // The user limit's lockout: the limiter's option, or one its algorithm carries.
    const lockouts = [
      ['blockDuration', { algorithm: fixedWindow({ limit: 2, window: '10s' }), blockDuration: '30s' }],
      ['an algorithm with its own lockout', { algorithm: withBlock(fixedWindow({ limit: 2, window: '10s' }), 30_000) }],
    ] as const;
    for (const [lockout, userOptions] of lockouts) {
      gatedIt(
        `a later limit's cached denial skips no earlier limit that records its denials (${lockout}): its lockout starts as without the cache, and the later limit is neither charged nor observed`,
        // A deny cache that remembers (on a store that hears every instance's resets: see `hearsEveryInstance`).
        () =>
          suite.store.capabilities.blocks === true &&
          suite.store.capabilities.hearsEveryInstance !== false &&
          runsAll(suite.store, ['fixed-window']),
        async () => {
          let now = 1_000;
          const prefix = freshPrefix('ordered');
          const common = { store: suite.store, clock: () => now, denyCache: true, timeout: false as const };
          // A user limit of 2 per 10 s with a 30 s lockout, then an IP limit of 1 per 10 s.
          const user = createLimiter({ ...common, ...userOptions, prefix: `${prefix}-user` });
          const ip = createLimiter({
            ...common,
            algorithm: fixedWindow({ limit: 1, window: '10s' }),
            prefix: `${prefix}-ip`,
          });
          const ipHeard: string[] = [];
          ip.observe({ decision: (event) => void ipHeard.push(event.key!) }, { keys: true });
          const group = combineLimiters([user, ip]);
          await resetsHeard(suite.store);
          for (const [at, keys, answer] of [
            [1_000, ['alice', 'ip1'], { allowed: true }],
            [1_000, ['alice', 'ip2'], { allowed: true }],
            // ip1 is full: its denial is remembered by its deny cache from here on.
            [1_000, ['bob', 'ip1'], { allowed: false, deniedBy: 1 }],
            [1_000, ['bob', 'ip1'], { allowed: false, deniedBy: 1 }],
            // alice is over her limit too: it is asked first, denies, and her lockout starts.
            [1_000, ['alice', 'ip1'], { allowed: false, deniedBy: 0, retryAfterMs: 30_000 }],
            // bob's units of the user limit were given back each time: both are his.
            [1_000, ['bob', 'ip3'], { allowed: true }],
            [1_000, ['bob', 'ip4'], { allowed: true }],
            [11_000, ['alice', 'ip5'], { allowed: false, deniedBy: 0, retryAfterMs: 20_000 }],
          ] as const) {
            now = at;
            expect(await group.consume([...keys]), `${keys.join(' from ')} at ${at} ms`).toMatchObject(answer);
          }
          // ip1's limit heard alice's first request and bob's two, not alice's last: her own limit denied
          // it first. (On a Cluster, limits on other slots are charged side by side: ip5 is heard there.)
          expect(ipHeard.filter((key) => key === 'ip1')).toHaveLength(3);
        },
      );
    }
  });

  describe('atomicity', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: 200 concurrent calls on one key admit exactly the limit`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          const limiter = limiterOn(suite.store, sample.make(25, 3_600_000), freshPrefix('atomic'), () => 1_000);
          const decisions = await Promise.all(Array.from({ length: 200 }, () => limiter.consume('hot')));
          expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
        },
      );
    }
    gatedIt(
      'concurrency: 100 concurrent acquires admit exactly the limit; releases free them',
      () => runsAll(suite.store, ['concurrency']),
      async () => {
        const limiter = limiterOn(suite.store, concurrency({ limit: 7, lease: '1m' }), freshPrefix('cc'), () => 1_000);
        const leases = await Promise.all(Array.from({ length: 100 }, () => limiter.acquire('hot')));
        const held = leases.filter((l) => l.allowed);
        expect(held).toHaveLength(7);
        await Promise.all(held.map((l) => l.release()));
        await Promise.all(held.map((l) => l.release()));
        const again = await Promise.all(Array.from({ length: 10 }, () => limiter.acquire('hot')));
        expect(again.filter((l) => l.allowed)).toHaveLength(7);
      },
    );
  });
}

/** Store operations of one kind that the scenarios do not reach. */
export function describeStoreOperations(suite: Suite): void {
  describe('store operations', () => {
    gatedIt(
      'acquiring a live lease id again renews it and takes no second permit',
      () => runsAll(suite.store, ['concurrency']),
      async () => {
        const { store } = suite;
        const algorithm = concurrency({ limit: 2, lease: '1s' });
        const key = `${freshPrefix('renew')}:k`;
        expect(await store.acquire(key, algorithm, 'lease-a', 1_000)).toMatchObject({ allowed: true, remaining: 1 });
        expect(await store.acquire(key, algorithm, 'lease-a', 1_500)).toMatchObject({
          allowed: true,
          remaining: 1,
          resetMs: 1000,
        });
        expect(await store.acquire(key, algorithm, 'lease-b', 1_600)).toMatchObject({ allowed: true, remaining: 0 });
        expect(await store.acquire(key, algorithm, 'lease-a', 1_700)).toMatchObject({ allowed: true, remaining: 0 });
        expect(await store.acquire(key, algorithm, 'lease-c', 1_700)).toMatchObject({
          allowed: false,
          retryAfterMs: 900,
        });
        await store.release(key, algorithm, 'lease-a');
        await store.release(key, algorithm, 'lease-b');
      },
    );

    gatedIt(
      'a flood of counted denials keeps a sliding log bounded and blocking until the flood has left the window',
      () => runsAll(suite.store, ['sliding-window-log']),
      async () => {
        let now = 0;
        const limiter = limiterOn(
          suite.store,
          slidingWindowLog({ limit: 2, window: '1s', countDenied: true }),
          freshPrefix('flood'),
          () => now,
        );
        for (now = 0; now < 400; now++) await limiter.consume('k');
        now = 1_398;
        expect((await limiter.peek('k', 1)).allowed).toBe(false);
        now = 1_399;
        expect(await limiter.peek('k', 1)).toMatchObject({ allowed: true, remaining: 1 });
      },
    );
  });
}
