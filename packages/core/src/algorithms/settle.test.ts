import { describe, expect, it } from 'vitest';
import type { NumericAlgorithm, SettleRequest } from '../algorithm.js';
import { settleBy, undoDifference, type GiveBack, type Overshoot } from './settle.js';

const settlement = (cost: number, actual: number): SettleRequest => ({
  now: 1_500,
  cost,
  actual,
  chargedAt: 1_000,
  delayMs: 20,
  maxDebt: 5,
});

/** A settle whose two halves record their calls. */
function recorded(): { settle: NumericAlgorithm['settle']; calls: string[] } {
  const calls: string[] = [];
  const giveBack: GiveBack = (_s, at, { now, cost, actual }) =>
    void calls.push(`giveBack at ${at}, ${now}: ${cost} → ${actual}`);
  const overshoot: Overshoot = (_s, at, fresh, { now, cost, actual }) =>
    void calls.push(`overshoot at ${at}, ${now}${fresh ? ', fresh' : ''}: ${cost} → ${actual}`);
  return { settle: settleBy(giveBack, overshoot), calls };
}

describe('settleBy: the settle of a numeric algorithm from its give-back and its overshoot', () => {
  it('below the estimate: the give-back, on a stored state', () => {
    const { settle, calls } = recorded();
    settle(new Float64Array(4), 2, false, settlement(10, 3));
    expect(calls).toEqual(['giveBack at 2, 1500: 10 → 3']);
  });

  it('below the estimate with no state stored: nothing (there is nothing to give back to)', () => {
    const { settle, calls } = recorded();
    settle(new Float64Array(4), 2, true, settlement(10, 0));
    expect(calls).toEqual([]);
  });

  it('at the estimate and above it: the overshoot, on a stored state or a fresh one', () => {
    const { settle, calls } = recorded();
    const s = new Float64Array(4);
    settle(s, 0, false, settlement(10, 10));
    settle(s, 2, false, settlement(10, 12));
    settle(s, 2, true, settlement(10, 12));
    expect(calls).toEqual([
      'overshoot at 0, 1500: 10 → 10',
      'overshoot at 2, 1500: 10 → 12',
      'overshoot at 2, 1500, fresh: 10 → 12',
    ]);
  });
});

describe("undoDifference: the give-back of the difference by the algorithm's undo", () => {
  it('undoes cost − actual with the time and the delay of the settled charge', () => {
    const undone: unknown[][] = [];
    const undo: NumericAlgorithm['undo'] = (_s, at, { now, cost, chargedAt, delayMs }) =>
      void undone.push([at, now, cost, chargedAt, delayMs]);
    undoDifference(undo)(new Float64Array(2), 0, settlement(10, 3.5));
    expect(undone).toEqual([[0, 1_500, 6.5, 1_000, 20]]);
  });
});
