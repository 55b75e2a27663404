import { describe, expect, it } from 'vitest';
import type { Algorithm, AlgorithmKind } from '../../algorithm.js';
import { createLimiter } from '../../limiter/index.js';
import type { Store } from '../../store/interface.js';
import { checkScenario, runScenario } from '../run-scenario.js';
import { kindSuites, reserves, scenarios, type Scenario } from '../scenarios.js';
import { StepStore } from '../step-store.js';
import { freshPrefix, gatedIt, runsAll, type Suite } from './suite.js';

/**
 * Runs one scenario on a store and throws, listing every mismatch, unless all its expectations hold:
 * the check each scenario table's test makes.
 */
export async function expectScenario(store: Store, scenario: Scenario): Promise<void> {
  const problems = checkScenario(await runScenario(store, scenario, { prefix: freshPrefix('scenario') }));
  expect(problems, `${scenario.name}:\n${problems.join('\n')}\n`).toEqual([]);
}

/** Every scenario table whose algorithms the store runs. */
export function describeScenarioTables(suite: Suite): void {
  describe('scenario tables', () => {
    for (const scenario of scenarios) {
      const applies = (): boolean =>
        runsAll(suite.store, scenario.algorithms) &&
        (!reserves(scenario) || suite.store.capabilities.reservations === true);
      gatedIt(`${scenario.name}: ${scenario.description}`, applies, () => expectScenario(suite.store, scenario));
    }
  });
}

/**
 * One kind's scenario tables on a fresh {@link StepStore}: what each `algorithms/<name>.test.ts` runs
 * beside its step tables, so that the tests of one algorithm's file include its scenarios.
 */
export function describeKindScenarios(kind: AlgorithmKind): void {
  const tables = kindSuites
    .filter((suite) => suite.kind === kind)
    .flatMap((suite) => Object.values(suite.scenarios).flat());
  describe(`${kind}: its scenario tables on the StepStore`, () => {
    for (const scenario of tables) it(scenario.name, () => expectScenario(new StepStore(), scenario));
  });
}

/**
 * The gateway test of the seed: a warm-up well under the limit, then three times the limit. Here one
 * key, 50/s for 10 s (a request every 20 ms), then 6 requests every 10 ms for 5 s, on the fake clock.
 * Returns how many were admitted in the warm-up and in each second of the surge, and the longest
 * delay a shaper gave.
 */
async function surge(
  store: Store,
  algorithm: Algorithm,
): Promise<{ warm: number; perSecond: number[]; maxDelay: number }> {
  let now = 0;
  const limiter = createLimiter({
    algorithm,
    store,
    clock: () => now,
    prefix: freshPrefix('surge'),
    timeout: false,
    denyCache: false,
  });
  let warm = 0;
  for (let i = 0; i < 500; i++) {
    now = i * 20;
    if ((await limiter.consume('gateway')).allowed) warm++;
  }
  const perSecond = [0, 0, 0, 0, 0];
  let maxDelay = 0;
  for (let batch = 0; batch < 500; batch++) {
    now = 10_000 + batch * 10;
    for (let j = 0; j < 6; j++) {
      const d = await limiter.consume('gateway');
      if (!d.allowed) continue;
      perSecond[Math.floor(batch / 100)]!++;
      maxDelay = Math.max(maxDelay, d.delayMs);
    }
  }
  return { warm, perSecond, maxDelay };
}

/** Each kind's row of the seed's load test (seeds/001). */
export function describeLoadTest(suite: Suite): void {
  describe("the seed's load test (seeds/001), scaled: 10 s at 50 requests/s, then 5 s at 600/s", () => {
    for (const { loadTest } of kindSuites) {
      if (loadTest === undefined) continue;
      gatedIt(
        loadTest.name,
        () => runsAll(suite.store, [loadTest.algorithm]),
        async () => {
          expect(await surge(suite.store, loadTest.algorithm)).toEqual(loadTest.expected);
        },
      );
    }
  });
}
