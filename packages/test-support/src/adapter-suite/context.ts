import type { Store } from '@rl/core';
import { afterEach, beforeEach } from 'vitest';
import { HoldTimers } from '../hold-timers.js';
import type { Adapter, AppSpec, MountedApp, StoreUnderTest } from './adapter.js';
import { Refusals } from './refusals.js';

/** Window-aligned fake time: fixed windows of 1m start exactly here. */
export const T0 = 1_800_000_000_000;
const clock = (): number => T0;

/** What each part of the suite gets: the adapter, and per test a fresh store, fresh fake timers and the apps it opens. */
export interface SuiteContext {
  readonly adapter: Adapter;
  /** The store under test (its name, whether it is remote). */
  readonly stores: StoreUnderTest;
  /** This test's store (a fresh state). */
  readonly store: Store;
  /** This test's timers: every middleware's holds and store timeouts. */
  readonly timers: HoldTimers;
  /**
   * Mounts an app whose middlewares get the frozen clock {@link T0}, this test's store and timers
   * (and, for a remote store, a 5 s timeout on those fake timers) and no outage logging, unless the
   * spec sets them; closed after the test.
   */
  open(spec: AppSpec): Promise<MountedApp>;
}

/** Registers, in the calling describe, the hooks that give each test its store, timers and apps. */
export function suiteContext(adapter: Adapter, stores: StoreUnderTest): SuiteContext {
  let store: Store | undefined;
  let timers: HoldTimers | undefined;
  let refusals: Refusals | undefined;
  const opened: MountedApp[] = [];
  beforeEach(() => {
    store = stores.create();
    timers = new HoldTimers();
    if (adapter.refusalsAsWarnings === true) refusals = new Refusals();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((app) => app.close()));
    (store as { close?(): void } | undefined)?.close?.();
    store = undefined;
    const ending = refusals;
    refusals = undefined;
    ending?.end();
  });
  const current = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the adapter suite: a store and timers exist inside a test only');
    return value;
  };
  return {
    adapter,
    stores,
    get store() {
      return current(store);
    },
    get timers() {
      return current(timers);
    },
    async open(spec) {
      // Quiet by default: a test of outage logging says `logStoreErrors: undefined` (the default, on).
      const defaults = {
        clock,
        store: current(store),
        timers: current(timers),
        logStoreErrors: false,
        ...(stores.remote && { timeout: '5s' }),
      };
      const app = await adapter.mount({
        ...spec,
        middlewares: spec.middlewares.map((options) => ({ ...defaults, ...options })),
      });
      opened.push(app);
      return refusals === undefined ? app : refusals.watch(app);
    },
  };
}
