import { expect } from 'vitest';
import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { keyExpiresAt, stepKey, undoKey, type KeyState } from './key-state.js';

/**
 * One row of a step table (x/time/rate's `allow{t, n, ok}`): an operation on one key at a named
 * time, run straight against the algorithm, and what it must return.
 */
export interface StepRow {
  /** Time of the row, in ms (one of the table's named times `t0`, `t1`, …). */
  at: number;
  /**
   * `'take'` (default): a step that records; `'peek'`: a step with `commit` false, checked to write
   * nothing; `'undo'`: gives back `cost`; `'acquire'`/`'release'`: lease `lease` (concurrency).
   */
  op?: 'take' | 'peek' | 'undo' | 'acquire' | 'release';
  /** Units; default 1 (0 for a peek: the state only). */
  cost?: number;
  /** The row repeated this many times at the same instant (a batch). Default 1. */
  times?: number;
  /** Which of the table's configurations runs the row (a configuration change over the same state). Default 0. */
  config?: number;
  /** The lease id of `acquire` and `release`. */
  lease?: string;
  /** How many of the batch are admitted. */
  admitted?: number;
  /** The `delayMs` of each admitted request, in order. */
  delays?: number[];
  /** Fields of the row's last decision. */
  last?: Partial<Omit<Decision, 'policy' | 'reason'>>;
  /** When the key's state has fully recovered, after the row (ms on the same clock). */
  expiresAt?: number;
}

/**
 * Runs a step table on one key: each row at its time through `algorithms[row.config ?? 0]` (one
 * algorithm, or several configurations of one kind sharing the state). Fails on the first row whose
 * decisions or expiry differ, naming the row; every peek is also checked to leave the state unchanged.
 */
export function runSteps(algorithms: Algorithm | readonly Algorithm[], rows: readonly StepRow[]): void {
  const configs = Array.isArray(algorithms) ? algorithms : [algorithms as Algorithm];
  let state: KeyState | undefined;
  rows.forEach((row, index) => {
    const algorithm = configs[row.config ?? 0]!;
    const op = row.op ?? 'take';
    const where = `row ${index} (at ${row.at}, ${op}${row.times ? ` ×${row.times}` : ''})`;
    const decisions: Decision[] = [];
    for (let i = 0; i < (row.times ?? 1); i++) {
      if (op === 'take' || op === 'peek') {
        const before = structuredClone(state);
        const stepped = stepKey(algorithm, state, {
          now: row.at,
          cost: row.cost ?? (op === 'peek' ? 0 : 1),
          commit: op === 'take',
          maxDelay: undefined,
        });
        if (op === 'peek') expect(stepped.state, `${where}: a peek wrote to the state`).toEqual(before);
        state = stepped.state;
        decisions.push(stepped.decision);
      } else if (op === 'undo') {
        undoKey(algorithm, state, { now: row.at, cost: row.cost ?? 1 });
      } else if (algorithm.stateKind === 'leases') {
        if (op === 'release') {
          if (state !== undefined) algorithm.release(state as Map<string, number>, row.lease ?? '');
        } else {
          const acquired = algorithm.acquire(state as Map<string, number> | undefined, row.at, row.lease ?? '', true);
          state = acquired.state;
          decisions.push(acquired.decision);
        }
      }
    }
    if (row.admitted !== undefined)
      expect(decisions.filter((d) => d.allowed).length, `${where}: admitted`).toBe(row.admitted);
    if (row.delays !== undefined)
      expect(
        decisions.filter((d) => d.allowed).map((d) => d.delayMs),
        `${where}: delays`,
      ).toEqual(row.delays);
    if (row.last !== undefined)
      expect(decisions[decisions.length - 1], `${where}: last decision`).toMatchObject(row.last);
    if (row.expiresAt !== undefined)
      expect(keyExpiresAt(algorithm, state), `${where}: expiresAt`).toBeCloseTo(row.expiresAt, 6);
  });
}

/**
 * Checks the expiry contract: after `cost` units at `at`, the key's state expires at `expiresAt`, and
 * that is when it has fully recovered: from then on it decides as no state would (for the smallest and
 * the largest cost), while 1 ms before it still does not.
 */
export function expectExpiry(algorithm: Algorithm, taken: { at: number; cost: number; expiresAt: number }): void {
  const { state } = stepKey(algorithm, undefined, {
    now: taken.at,
    cost: taken.cost,
    commit: true,
    maxDelay: undefined,
  });
  expect(keyExpiresAt(algorithm, state), 'expiresAt').toBeCloseTo(taken.expiresAt, 6);
  const decide = (s: KeyState | undefined, now: number, cost: number) =>
    stepKey(algorithm, s, { now, cost, commit: false, maxDelay: undefined }).decision;
  for (const cost of [0, algorithm.maxCost]) {
    expect(decide(state, taken.expiresAt, cost), `at expiresAt, cost ${cost}`).toEqual(
      decide(undefined, taken.expiresAt, cost),
    );
    expect(decide(state, taken.expiresAt + 1000, cost), `after expiresAt, cost ${cost}`).toEqual(
      decide(undefined, taken.expiresAt + 1000, cost),
    );
  }
  expect(decide(state, taken.expiresAt - 1, 0), '1 ms before expiresAt').not.toEqual(
    decide(undefined, taken.expiresAt - 1, 0),
  );
}
