import { describe, expect, it } from 'vitest';
import { slidingWindowLog } from './sliding-window-log.js';
import type { LogState } from '../algorithm.js';

describe('slidingWindowLog with countDenied', () => {
  it('adds one record for a flood of denials, and blocks until the last denial leaves', () => {
    const log = slidingWindowLog({ limit: 3, window: '1s', countDenied: true });
    let state: LogState = log.step(undefined, 0, 1, true).state;
    for (let t = 1; t < 5000; t++) {
      state = log.step(state, t % 1000, 1, true).state;
      expect(state.times.length - state.head).toBeLessThanOrEqual(4);
    }
    // The flood stopped at 999 (times never go back): every unit it recorded stays until 1999.
    expect(log.step(state, 1998, 1, false).decision.allowed).toBe(false);
    expect(log.step(state, 1999, 1, false).decision).toMatchObject({ allowed: true, remaining: 2 });
    expect(state.sum).toBe(5000);
    expect(state.costs).toEqual([1, 1, 1, -4997]);
  });

  it('records each admitted request on its own, with its cost', () => {
    const log = slidingWindowLog({ limit: 10, window: '1s' });
    const { state } = log.step(undefined, 0, 3, true);
    log.step(state, 0, 2, true);
    expect(state.times).toEqual([0, 0]);
    expect(state.costs).toEqual([3, 2]);
  });
});

describe('slidingWindowLog record costs', () => {
  it('keeps no costs array while every record costs 1, and makes one with the first other cost', () => {
    const log = slidingWindowLog({ limit: 10, window: '1s' });
    const { state } = log.step(undefined, 0, 1, true);
    log.step(state, 10, 1, true);
    expect(state.costs).toBeNull();
    expect(log.step(state, 20, 2, true).decision.remaining).toBe(6);
    expect(state.costs).toEqual([1, 1, 2]);
    log.undo(state, 30, 2);
    expect(state.times).toEqual([0, 10]);
    expect(state.sum).toBe(2);
    // Once every record has left the window, the state starts over without costs.
    expect(log.step(state, 2000, 1, true).decision.remaining).toBe(9);
    expect(state.costs).toBeNull();
  });

  it('undo of a unit record removes the newest one', () => {
    const log = slidingWindowLog({ limit: 3, window: '1s' });
    const { state } = log.step(undefined, 0, 1, true);
    log.step(state, 5, 1, true);
    log.undo(state, 6, 1);
    expect(state.times).toEqual([0]);
    expect(log.step(state, 6, 0, false).decision.remaining).toBe(2);
  });
});
