import { bucketSuites } from './kinds/buckets.js';
import { concurrencySuites } from './kinds/concurrency.js';
import { windowSuites } from './kinds/windows.js';
import type { KindSuite, Scenario, ScenarioGroup } from './kind-suite.js';

export type {
  Configuration,
  DrawnOptions,
  ExpectedDecision,
  KindSuite,
  LoadTestRow,
  Sample,
  Scenario,
  ScenarioGroup,
  ScenarioStep,
} from './kind-suite.js';

/**
 * What the conformance suite checks per algorithm kind, one `KindSuite` per kind in `kinds/`, by
 * family (windows, buckets, concurrency: each file lists its suites), in the order of
 * `ALGORITHM_KINDS`. Adding an algorithm adds its suite to its family's file (a new family, its file's
 * list here); every table below, and every part of the conformance suite, picks it up.
 */
export const kindSuites: readonly KindSuite[] = [...windowSuites, ...bucketSuites, ...concurrencySuites];

const group = (name: ScenarioGroup): Scenario[] => kindSuites.flatMap((suite) => suite.scenarios[name] ?? []);

/** The seed's table (seeds/000, section 6): the same two batches through each algorithm, "100 per second". */
export const seedScenarios: Scenario[] = group('seed');
/** Costs: an export costing 5 beside requests costing 1. */
export const costScenarios: Scenario[] = group('cost');
/** Retry-after and reset values, to the millisecond. */
export const timingScenarios: Scenario[] = group('timing');
/** Window edges: `[start, end)` for fixed windows, a left edge that is exclusive for the log. */
export const edgeScenarios: Scenario[] = group('edge');
/** The clock going backwards: no tokens are added, stored time never moves back. */
export const clockScenarios: Scenario[] = group('clock');
/** Peek writes nothing, reset forgets, countDenied counts denials. */
export const stateScenarios: Scenario[] = group('state');
/** A changed configuration over existing state: balances are clamped, never refilled. */
export const configChangeScenarios: Scenario[] = group('configChange');
/** Concurrency permits: taken, released once, expiring with their lease. */
export const concurrencyScenarios: Scenario[] = group('concurrency');
/** Give-backs at a later time: only to the window the request was charged in, never above the uncharged balance. */
export const giveBackScenarios: Scenario[] = group('giveBack');

/** Reservations: slots ahead within `maxDelay`, later requests queued behind them, and their cancels. */
export const reservationScenarios: Scenario[] = group('reservation');

/**
 * The lockout tables (`blockDuration`, through `withBlock`), at named times, each kind's `lockouts`: a
 * denial blocks the key for the block from that denial; requests during it are denied with the time to
 * its end, charge nothing and do not extend it; after it the algorithm decides as before. Run on a
 * store that declares `capabilities.blocks`; not among {@link scenarios}.
 */
export const lockoutScenarios: readonly Scenario[] = kindSuites.flatMap((suite) => suite.lockouts ?? []);

/** Whether a scenario reserves (it then needs a store with `capabilities.reservations`). */
export const reserves = (scenario: Scenario): boolean =>
  scenario.steps.some((step) => step.op === 'reserve' || step.op === 'cancel');

/** Every scenario table, the seed's first. */
export const scenarios: Scenario[] = [
  ...seedScenarios,
  ...costScenarios,
  ...timingScenarios,
  ...edgeScenarios,
  ...clockScenarios,
  ...stateScenarios,
  ...configChangeScenarios,
  ...concurrencyScenarios,
  ...giveBackScenarios,
  ...reservationScenarios,
];
