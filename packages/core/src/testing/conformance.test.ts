import { describe, expect, it } from 'vitest';
import type { Charge, Charged } from '../store/interface.js';
import { runStoreConformance } from './conformance.js';
import { expectScenario } from './conformance/tables.js';
import { runsAll } from './conformance/suite.js';
import { seedScenarios } from './scenarios.js';
import { StepStore } from './step-store.js';

// Every scenario table, the seed's first, and every other check, on the reference store.
runStoreConformance({ name: 'StepStore', createStore: () => new StepStore() });

/** A StepStore that counts the decisions it made. */
class CountingStepStore extends StepStore {
  decisions = 0;
  override charge(charge: Charge, now: number | undefined): Charged {
    this.decisions++;
    return super.charge(charge, now);
  }
}

// A store that runs only token buckets passes: the other kinds' tests are skipped, not failed.
const tokenBucketsOnly = new CountingStepStore({ algorithms: ['token-bucket'] });
runStoreConformance({ name: 'StepStore running only token buckets', createStore: () => tokenBucketsOnly });

describe('the conformance suite runs what a store declares', () => {
  it('ran the token-bucket checks on the store that runs only token buckets (the tests above run first)', () => {
    expect(tokenBucketsOnly.decisions).toBeGreaterThan(1000);
  });

  it('still fails a store that declares an algorithm and gets it wrong', async () => {
    // This store ignores the limiter's time and decides at 0: its token buckets never refill.
    const stuckClock = new (class extends StepStore {
      override charge(charge: Charge): Charged {
        return super.charge(charge, 0);
      }
    })({ algorithms: ['token-bucket'] });
    const seed = seedScenarios.find((scenario) => scenario.algorithms[0]!.kind === 'token-bucket')!;
    expect(runsAll(stuckClock, seed.algorithms)).toBe(true);
    await expect(expectScenario(stuckClock, seed)).rejects.toThrow(/admitted 0, expected 2/);
    await expect(expectScenario(new StepStore(), seed)).resolves.toBeUndefined();
  });
});
