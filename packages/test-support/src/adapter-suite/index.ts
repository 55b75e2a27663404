/**
 * The shared adapter suite: every framework adapter runs it, on the memory store and on a real Redis,
 * instead of keeping its own copy of the same tests. Framework-specific behaviour (Express routers and
 * `trust proxy` details, Fastify's per-route config, hooks and `onClose`, Koa's `ctx.state`, …) stays in
 * each adapter's own test file.
 *
 * ```ts
 * describeAdapter([expressAdapter('Express 5', express), expressAdapter('Express 4', express4)], {
 *   redisStore: (client, prefix) => new RedisStore({ client, prefix }),
 * });
 * ```
 */
import type { Redis } from 'ioredis';
import { describe } from 'vitest';
import { MemoryStore } from '@rl/store-memory';
import type { Store } from '@rl/core';
import { useRedis } from '../redis-fixtures.js';
import type { Adapter, StoreUnderTest } from './adapter.js';
import { batchingTests } from './batching.js';
import { leaseTests } from './leases.js';
import { clientIpTests } from './client-ip.js';
import { doubleCountTests } from './double-count.js';
import { suiteContext } from './context.js';
import { failingFunctionTests, falsyThrowTests, outageLogTests, storeFailureTests } from './errors.js';
import { observerTests } from './observer.js';
import { headerTests } from './headers.js';
import { banTests } from './bans.js';
import { calendarPeriodTests } from './calendar-periods.js';
import { denyListTests } from './deny-list.js';
import { overrideTests } from './overrides.js';
import { limitTests } from './limits.js';
import { lockoutTests } from './lockouts.js';
import { optionTests } from './options.js';
import { permitTests } from './permits.js';
import { adaptiveStepTests, adaptiveTests } from './adaptive.js';
import { dryRunTests, outcomeTests, perRequestAlgorithmTests } from './policies.js';
import { shapingTests } from './shaping.js';
import { reservationTests } from './reservations.js';
import { settlementTests } from './settlements.js';
import { idempotencyTests } from './idempotency.js';

export interface AdapterSuiteOptions {
  /** A RedisStore on `client` whose keys start with `prefix` (the suite gives each test a fresh prefix). */
  redisStore: (client: Redis, prefix: string) => Store;
}

/**
 * Registers the shared adapter suite for each adapter (say, each major version of a framework): every
 * behaviour test on the memory store and on a Redis server the adapters share (started for the
 * calling file, or `REDIS_URL`), then the store-independent ones.
 */
export function describeAdapter(adapters: Adapter | readonly Adapter[], { redisStore }: AdapterSuiteOptions): void {
  const list = Array.isArray(adapters) ? adapters : [adapters as Adapter];
  const redis = useRedis(`rl-adapter-suite:${list[0]!.name}`);
  const stores: StoreUnderTest[] = [
    { name: 'memory store', create: () => new MemoryStore(), remote: false },
    { name: 'Redis store', create: () => redisStore(redis.client, redis.freshPrefix()), remote: true },
  ];
  for (const adapter of list) describeOne(adapter, stores, () => redis.client);
}

function describeOne(adapter: Adapter, stores: readonly StoreUnderTest[], redis: () => Redis): void {
  describe(adapter.name, () => {
    for (const store of stores) {
      describe(`on the ${store.name}`, () => {
        const t = suiteContext(adapter, store);
        describe('headers and the 429 at the limit', () => headerTests(t));
        describe('costs, several limits, skip and onLimit', () => limitTests(t));
        describe('client IP keys', () => clientIpTests(t));
        describe('waiting (shaping)', () => shapingTests(t));
        describe('waiting for reservations (wait with any rate algorithm)', () => reservationTests(t));
        describe('concurrency permits', () => permitTests(t));
        describe('adaptive concurrency', () => adaptiveTests(t));
        describe('key and cost functions that fail', () => failingFunctionTests(t));
        describe('user functions that throw what a framework reads as no error', () => falsyThrowTests(t));
        describe('a limit chosen per request', () => perRequestAlgorithmTests(t));
        describe('counting by the response outcome', () => outcomeTests(t));
        describe('dry-run', () => dryRunTests(t));
        describe('observers', () => observerTests(t));
        describe('lockouts (blockDuration)', () => lockoutTests(t));
        describe('quota leases', () => leaseTests(t));
        describe('charging from the response', () => settlementTests(t));
        describe('idempotent retries', () => idempotencyTests(t));
        describe('quotas: calendar periods and bans', () => {
          calendarPeriodTests(t);
          banTests(t);
        });
        describe('quotas: overrides held in the store', () => overrideTests(t));
        describe('quotas: a deny list kept elsewhere', () => denyListTests(t));
        if (store.remote && adapter.inject !== true) describe('batched Redis calls', () => batchingTests(t, redis));
      });
    }
    describe('without a working store', () => {
      const t = suiteContext(adapter, stores[0]!);
      storeFailureTests(t);
      outageLogTests(t);
    });
    describe('adaptive concurrency against a backend whose latency steps', () =>
      adaptiveStepTests(suiteContext(adapter, stores[0]!)));
    describe('double counting (RL_DOUBLE_COUNT)', () => doubleCountTests(suiteContext(adapter, stores[0]!)));
    describe('bad options are rejected when the middleware is created', () =>
      optionTests(suiteContext(adapter, stores[0]!)));
  });
}

export type { Adapter, AppSpec, MiddlewareOptions, MountedApp, RequestView, StoreUnderTest } from './adapter.js';
export { headersOf, statusOf } from './adapter.js';
export { expectUncounted } from './uncounted.js';
export { T0 } from './context.js';
