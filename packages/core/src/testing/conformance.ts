import { afterAll, beforeAll, describe } from 'vitest';
import type { Store } from '../store/interface.js';
import { describeCharged } from './conformance/charged.js';
import { describeAtomicity, describeCombinedLimits, describeStoreOperations } from './conformance/combined.js';
import { describeGiveBacks } from './conformance/give-backs.js';
import { describeGroups } from './conformance/groups.js';
import { describeIdempotency } from './conformance/idempotency.js';
import { describeKeyParts } from './conformance/key-parts.js';
import { describeBadInput, describeIsolation, describeOwnClock } from './conformance/input.js';
import { describeBans } from './conformance/bans.js';
import { describeOverrides } from './conformance/overrides.js';
import { describeLockouts } from './conformance/lockouts.js';
import { describeProperties } from './conformance/properties.js';
import { describeReservations } from './conformance/reservations.js';
import { describeResetNotices } from './conformance/reset-notices.js';
import { describeSettlements } from './conformance/settlements.js';
import type { Suite } from './conformance/suite.js';
import { describeLoadTest, describeScenarioTables } from './conformance/tables.js';

export interface ConformanceOptions {
  /** Shown in the test names. */
  name: string;
  /** Creates the store once for the suite. */
  createStore: () => Store | Promise<Store>;
  /** Closes it after the suite (default: `store.close()`). */
  closeStore?: (store: Store) => unknown;
  /** Runs per property test (default 100; lower it for remote stores). */
  propertyRuns?: number;
}

/**
 * The conformance suite every store runs (vitest). It registers a `describe` block with:
 * the scenario tables (the seed's two batches, costs, retry-after and reset values, window edges, the
 * clock going backwards, peek/reset/countDenied, configuration changes, concurrency leases), the seed's
 * load test, input validation that must leave state untouched, isolation of keys, prefixes and
 * algorithm kinds, combined limits, atomicity under concurrent calls, the store's own clock,
 * property tests of the algorithms' bounds, give-backs at later times (the deny cache forgets), every
 * operator's control (reset, ban, unban, override set and cleared) heard by the deny caches of the
 * other limiters on the store, on a store in this process or one with `watchResets`, and
 * lockouts (`blockDuration`) on a store that declares `capabilities.blocks`, and reservations (their
 * tables, bounds at their slots with cancels, FIFO, bad `maxDelay`) on one that declares
 * `capabilities.reservations`, a request's charges decided together (all-or-nothing, and what each
 * took: `Charged.took`) on one that has `chargeAll`, what a charge took (`Charged`: a replay, a
 * conflict, the id remembered) asked of the store itself, and settlements at the real cost (a table per
 * algorithm, debt and its bound, the window of the charge, the sum of actual costs as a property) on
 * one that declares `capabilities.settle`, and idempotent charges (replays, conflicts, the ttl, the
 * bound per key, give-backs) on one that declares `capabilities.idempotency`, and a charge's key
 * parts (`Charge.scope`, `Charge.local`): every spelling of a storage key is one state.
 *
 * Each test runs for the algorithm kinds the store lists in `capabilities.algorithms` and is reported
 * as skipped for the others, so a store that runs only some algorithms passes on what it declares.
 * What is checked per kind comes from the kind suites (`kindSuites`, in `kinds/` by family).
 */
export function runStoreConformance(options: ConformanceOptions): void {
  describe(`${options.name}: rl store conformance`, () => {
    let store: Store | undefined;
    beforeAll(async () => {
      store = await options.createStore();
    });
    afterAll(async () => {
      if (options.closeStore) await options.closeStore(store!);
      else await store?.close?.();
    });
    const suite: Suite = {
      get store(): Store {
        if (store === undefined) throw new Error('The conformance suite reads its store only inside tests.');
        return store;
      },
      runs: options.propertyRuns ?? 100,
    };

    describeScenarioTables(suite);
    describeLoadTest(suite);
    describeBadInput(suite);
    describeIsolation(suite);
    describeCombinedLimits(suite);
    describeAtomicity(suite);
    describeStoreOperations(suite);
    describeOwnClock(suite);
    describeProperties(suite);
    describeGiveBacks(suite);
    describeLockouts(suite);
    describeBans(suite);
    describeOverrides(suite);
    describeResetNotices(suite);
    describeReservations(suite);
    describeGroups(suite);
    describeSettlements(suite);
    describeCharged(suite);
    describeIdempotency(suite);
    describeKeyParts(suite);
  });
}
